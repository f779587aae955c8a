package wait

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForSucceeds(t *testing.T) {
	n := 0
	err := For(context.Background(), "the third try", time.Second, time.Millisecond, func() Result {
		n++
		if n < 3 {
			return Continue("try %d", n)
		}
		return Done()
	})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}

func TestForTimesOutSayingWhatItSaw(t *testing.T) {
	start := time.Now()
	err := For(context.Background(), "the daemon to stop", 200*time.Millisecond, 10*time.Millisecond, func() Result {
		return Continue("status rc=0: daemon: active")
	})
	var te *TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Contains(t, err.Error(), "waiting for the daemon to stop")
	assert.Contains(t, err.Error(), "last saw: status rc=0: daemon: active")
}

func TestForStopsOnFail(t *testing.T) {
	boom := errors.New("boom")
	err := For(context.Background(), "x", time.Minute, time.Millisecond, func() Result { return Fail(boom) })
	assert.ErrorIs(t, err, boom)
}
