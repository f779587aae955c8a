package board

import (
	"slices"
	"strings"
	"time"
)

// RunInfo is when and on what a board ran: the facts a history of runs is
// ordered and compared by. It is the board JSON's "run" object.
type RunInfo struct {
	Time       time.Time `json:"time"`
	Duration   float64   `json:"duration_s"`
	Commit     string    `json:"commit,omitempty"`
	Branch     string    `json:"branch,omitempty"`
	CommitURL  string    `json:"commit_url,omitempty"`
	GoVersion  string    `json:"go_version,omitempty"`
	Reproboard string    `json:"reproboard_go_version,omitempty"` // the Go reproboard itself was built with
	TargetHash string    `json:"target_hash,omitempty"`           // sha256 of the target's binary
}

// mergeRunInfo is the run of several shards: from the first start to the
// last end; commit and versions when the shards agree, else every value
// joined with ",", so a merge of shards of different commits shows it.
func mergeRunInfo(parts []*Board) *RunInfo {
	var infos []*RunInfo
	for _, p := range parts {
		if p.RunInfo != nil {
			infos = append(infos, p.RunInfo)
		}
	}
	if len(infos) == 0 {
		return nil
	}
	m := &RunInfo{Time: infos[0].Time}
	var end time.Time
	for _, r := range infos {
		if r.Time.Before(m.Time) {
			m.Time = r.Time
		}
		if e := r.Time.Add(time.Duration(r.Duration * float64(time.Second))); e.After(end) {
			end = e
		}
	}
	m.Duration = float64(end.Sub(m.Time).Milliseconds()) / 1000
	join := func(get func(*RunInfo) string) string {
		var vals []string
		for _, r := range infos {
			if v := get(r); v != "" && !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		return strings.Join(vals, ",")
	}
	m.Commit = join(func(r *RunInfo) string { return r.Commit })
	m.Branch = join(func(r *RunInfo) string { return r.Branch })
	m.GoVersion = join(func(r *RunInfo) string { return r.GoVersion })
	m.Reproboard = join(func(r *RunInfo) string { return r.Reproboard })
	m.TargetHash = join(func(r *RunInfo) string { return r.TargetHash })
	if !strings.Contains(m.Commit, ",") {
		m.CommitURL = infos[0].CommitURL
	}
	return m
}
