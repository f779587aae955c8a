package excerpt

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExcerptShort(t *testing.T) {
	assert.Equal(t, "hello", Excerpt("hello", 10))
	assert.Equal(t, "", Excerpt("", 0))
}

func TestExcerptKeepsTheTail(t *testing.T) {
	text := strings.Repeat("preamble\n", 500) + "error: the real cause"
	got := Excerpt(text, 0)
	assert.True(t, strings.HasSuffix(got, "error: the real cause"))
	assert.True(t, strings.HasPrefix(got, "...("), got[:40])
	elided := len(text) - DefaultLimit
	assert.Contains(t, got, "...("+itoa(elided)+" chars elided)...\n")
	assert.Len(t, strings.SplitN(got, "\n", 2)[1], DefaultLimit)
}

func TestExcerptNeverSplitsARune(t *testing.T) {
	text := strings.Repeat("é", 1000) // 2 bytes each
	for limit := 1; limit < 20; limit++ {
		got := Excerpt(text, limit)
		body := strings.SplitN(got, "\n", 2)[1]
		require.True(t, utf8.ValidString(body), "limit %d: %q", limit, body)
		assert.LessOrEqual(t, len(body), limit)
	}
}

func TestTailKeepsLastBytesAndCountsAll(t *testing.T) {
	tail := NewTail(10)
	for _, chunk := range []string{"abc", "defgh", "ijklmnop", "q"} {
		_, _ = tail.Write([]byte(chunk))
	}
	assert.Equal(t, int64(17), tail.Total())
	assert.Equal(t, "...(7 chars elided)...\nhijklmnopq", tail.String())

	small := NewTail(10)
	_, _ = small.Write([]byte("abc"))
	assert.Equal(t, "abc", small.String())

	big := NewTail(4)
	_, _ = big.Write([]byte("0123456789"))
	assert.Equal(t, "...(6 chars elided)...\n6789", big.String())
}

func TestTailStartsAtARuneBoundary(t *testing.T) {
	tail := NewTail(5)
	_, _ = tail.Write([]byte("ééééé")) // 10 bytes: kept tail starts mid-rune or not
	_, _ = tail.Write([]byte("x"))
	s := tail.String()
	assert.True(t, utf8.ValidString(s), "%q", s)
	assert.True(t, strings.HasSuffix(s, "x"))
}

// A target that prints hundreds of megabytes must not grow the harness.
func TestTailIsBounded(t *testing.T) {
	tail := NewTail(DefaultKeep)
	chunk := []byte(strings.Repeat("y", 32<<10))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < (200<<20)/len(chunk); i++ {
		_, _ = tail.Write(chunk)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	assert.Equal(t, int64(200<<20), tail.Total())
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	assert.Less(t, growth, int64(4<<20), "heap grew by %d bytes for 200 MB written", growth)
}

func itoa(n int) string { return strconv.Itoa(n) }
