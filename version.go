package cairn

import (
	"runtime/debug"
	"sync"
)

// BuildInfo says which cairn is running: the module version (or "devel"
// for a build from a checkout), the VCS revision and time when the build
// recorded them, and the Go version.
type BuildInfo struct {
	Version  string `json:"version" doc:"Module version, or devel for a build from a checkout."`
	Revision string `json:"revision,omitempty" doc:"VCS revision the binary was built from."`
	Time     string `json:"time,omitempty" doc:"Commit time of that revision."`
	Modified bool   `json:"modified,omitempty" doc:"The checkout had uncommitted changes."`
	Go       string `json:"go"`
}

var (
	buildOnce sync.Once
	build     BuildInfo
)

// Build returns the running binary's build information.
func Build() BuildInfo {
	buildOnce.Do(func() {
		build = BuildInfo{Version: "devel"}
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			return
		}
		build.Go = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			build.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				build.Revision = s.Value
			case "vcs.time":
				build.Time = s.Value
			case "vcs.modified":
				build.Modified = s.Value == "true"
			}
		}
	})
	return build
}

// String is the one-line form: "devel (3f2a1c9…, 2026-11-30T22:25:00Z)".
func (b BuildInfo) String() string {
	s := b.Version
	if b.Revision != "" {
		rev := b.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if b.Modified {
			rev += "+dirty"
		}
		s += " (" + rev
		if b.Time != "" {
			s += ", " + b.Time
		}
		s += ")"
	}
	if b.Go != "" {
		s += " " + b.Go
	}
	return s
}
