package main

import (
	"runtime/debug"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, c := range []struct {
		v    string
		bi   *debug.BuildInfo
		want string
	}{
		{"dev", bi, "v1.2.3 (commit 0123456789abcdef, 2026-01-02T03:04:05Z, modified, go1.26.0)"},
		{"v9", bi, "v9 (commit 0123456789abcdef, 2026-01-02T03:04:05Z, modified, go1.26.0)"},
		{"dev", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, "(devel) (commit unknown, go1.26.0)"},
	} {
		if got := describeBuild(c.v, c.bi); got != c.want {
			t.Errorf("describeBuild(%q) = %q; want %q", c.v, got, c.want)
		}
	}
}
