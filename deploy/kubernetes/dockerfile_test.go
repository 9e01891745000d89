package kubernetes

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, RUN, USER, ...
	args string
}

// stage is one FROM and what follows it.
type stage struct {
	from, name string
	body       []instruction
}

// parseDockerfile reads the repository's Dockerfile into stages. It knows
// the little of the syntax the file uses: comments, `\` continuations and
// `FROM image [AS name]`.
func parseDockerfile(t *testing.T) []stage {
	t.Helper()
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var ins []instruction
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if s, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		ins = append(ins, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	var stages []stage
	for _, in := range ins {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				t.Fatalf("Dockerfile:%d: FROM %q: want FROM image [AS name]", in.line, in.args)
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("Dockerfile:%d: %s before the first FROM", in.line, in.cmd)
			}
			continue
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	return stages
}

func (s stage) last(cmd string) (instruction, bool) {
	for i := len(s.body) - 1; i >= 0; i-- {
		if s.body[i].cmd == cmd {
			return s.body[i], true
		}
	}
	return instruction{}, false
}

// dockerUser is the numeric user of the default (last) stage.
func dockerUser(t *testing.T) string {
	t.Helper()
	stages := parseDockerfile(t)
	u, ok := stages[len(stages)-1].last("USER")
	if !ok {
		t.Fatal("the image has no USER")
	}
	uid, _, _ := strings.Cut(u.args, ":")
	return uid
}

// Issue #12: the image cannot be built here (no container engine), so
// the Dockerfile is linted: every base pinned (a version tag or a digest,
// never latest), a static build with the flags TestStaticBuild checks,
// every runtime stage running as a numeric non-root user with an
// exec-form entrypoint, and nothing fetched from a URL.
func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("%d stages; want a build stage and a runtime stage", len(stages))
	}
	names := map[string]bool{}
	pinned := regexp.MustCompile(`^[a-z0-9./_-]+(:[A-Za-z0-9._-]*[0-9][A-Za-z0-9._-]*)?(@sha256:[0-9a-f]{64})?$`)
	for _, s := range stages {
		switch {
		case names[s.from]: // an earlier stage
		case s.from == "scratch":
		case !pinned.MatchString(s.from) || !(strings.Contains(s.from, ":") || strings.Contains(s.from, "@sha256:")) || strings.HasSuffix(s.from, ":latest"):
			t.Errorf("FROM %s: pin the base by version or digest", s.from)
		}
		if s.name != "" {
			names[s.name] = true
		}
	}

	// The build.
	build := stages[0]
	var goBuild string
	for _, in := range build.body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			goBuild = in.args
		}
		if in.cmd == "ADD" && strings.Contains(in.args, "://") {
			t.Errorf("Dockerfile:%d: ADD from a URL: nothing unpinned enters the image", in.line)
		}
	}
	if goBuild == "" {
		t.Fatal("the build stage has no RUN go build")
	}
	for _, want := range append([]string{"CGO_ENABLED=0"}, staticFlags(t)...) {
		if !strings.Contains(goBuild, want) {
			t.Errorf("the image's go build lacks %q, which TestStaticBuild builds with: %s", want, goBuild)
		}
	}

	// Every runtime stage: non-root, exec form, the binary it copied.
	for _, s := range stages[1:] {
		u, ok := s.last("USER")
		uid, _, _ := strings.Cut(u.args, ":")
		if n, err := strconv.Atoi(uid); !ok || err != nil || n == 0 {
			t.Errorf("stage %q: USER %q; want a numeric non-root user (runAsNonRoot needs a number to check)", s.name, u.args)
		}
		ep, ok := s.last("ENTRYPOINT")
		if !ok || !strings.HasPrefix(ep.args, "[") {
			t.Errorf("stage %q: ENTRYPOINT %q; want the exec form (no shell in the image)", s.name, ep.args)
			continue
		}
		bin := strings.Trim(strings.Split(strings.Trim(ep.args, "[]"), ",")[0], `" `)
		copied := false
		for _, in := range s.body {
			copied = copied || in.cmd == "COPY" && strings.HasSuffix(in.args, " "+bin)
		}
		if !copied {
			t.Errorf("stage %q: the entrypoint %s is not the binary the build stage made", s.name, bin)
		}
		if cmd, ok := s.last("CMD"); !ok || !strings.Contains(cmd.args, `"--http"`) {
			t.Errorf("stage %q: CMD %q; want serve --http", s.name, cmd.args)
		}
	}
	if last := stages[len(stages)-1]; last.from != "scratch" {
		t.Errorf("the default image is FROM %s; want scratch: a static binary needs nothing else", last.from)
	}
}

// staticFlags reads the build flags of cmd/mcp-gate's TestStaticBuild, so
// that the image and the tested binary cannot drift apart.
func staticFlags(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../../cmd/mcp-gate/static_test.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`staticBuildFlags = \[\]string\{([^}]*)\}`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no staticBuildFlags in cmd/mcp-gate/static_test.go")
	}
	var out []string
	for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllSubmatch(m[1], -1) {
		f := string(q[1])
		switch {
		case f == "build" || f == "-o":
		case strings.HasPrefix(f, "-ldflags="):
			// The image adds -X main.version; the rest must be there.
			for _, part := range strings.Fields(strings.TrimPrefix(f, "-ldflags=")) {
				out = append(out, part)
			}
		default:
			out = append(out, f)
		}
	}
	return out
}
