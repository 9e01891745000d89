package policy

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// maxLinks bounds the symlinks one path may pass through, like the kernel's
// ELOOP limit, so that a link loop ends in an error rather than a hang.
const maxLinks = 40

// maxSteps bounds the components one resolution walks, links' targets
// included. A real path has tens; without a bound, a megabyte of "x/../"
// would cost a system call per component on the path of a call. A path
// over it is an error, which fails closed.
const maxSteps = 4096

// A reading is one way of deciding which file a path names. The kernel and
// the servers in front of it disagree about `..` after a symlink: for the
// kernel, /work/link/../x is the parent of link's target, joined with x; a
// server that first normalises the text (Node's path.resolve, Python's
// os.path.abspath, Go's filepath.Clean) opens /work/x. A policy cannot know
// which one a server does, so a decision whose conditions read paths is made
// once per reading and the most restrictive verdict wins.
type reading uint8

// Each of the two also has a case-insensitive variant. macOS and Windows
// file systems (and casefold ext4, vfat, a WSL /mnt/c) open /Users/me/.SSH
// as /Users/me/.ssh and /private/ETC/passwd as /private/etc/passwd, so
// under those variants the path functions compare names regardless of
// case: a deny on `.ssh` or `/etc` holds against a spelling in another
// case, and since the most restrictive verdict wins, no allow is widened.
const (
	// readKernel walks the components in order, replacing each symlink by
	// its target before a later `..` applies.
	readKernel reading = iota
	// readLexical applies `..` to the text first, as a normalising server
	// does, and then follows the symlinks of what is left as the kernel
	// will when the server opens it.
	readLexical
	// readKernelFold and readLexicalFold resolve as the two above and
	// compare names regardless of case.
	readKernelFold
	readLexicalFold

	numReadings = 4
)

// lexical reports whether the reading applies `..` to the text first.
func (r reading) lexical() bool { return r&1 == 1 }

// fold reports whether the reading compares names regardless of case.
func (r reading) fold() bool { return r&2 != 0 }

// String names the reading as a decision's reason does.
func (r reading) String() string {
	s := "symlinks followed before `..`, as the kernel reads them"
	if r.lexical() {
		s = "`..` applied before symlinks, as servers that normalise paths read them"
	}
	if r.fold() {
		s += ", names compared regardless of case, as case-insensitive file systems (macOS, Windows) open them"
	}
	return s
}

// foldPath puts a resolved path or a name in one case for the readings
// that compare regardless of case (Unicode simple folding).
func foldPath(s string, r reading) string {
	if !r.fold() {
		return s
	}
	return rawjson.FoldKey(s)
}

// foldName is foldPath for a resolved path or a name (not a pattern): the
// readings that compare regardless of case also read each name as Windows
// opens it, without its trailing dots and spaces and without an NTFS
// stream (.ssh.\id_rsa and secrets.env::$DATA open .ssh\id_rsa and
// secrets.env there). Elsewhere such names are rare, and reading them so
// can only make a deny match.
func foldName(s string, r reading) string {
	if !r.fold() {
		return s
	}
	if strings.ContainsAny(s, ". :") {
		segs := strings.Split(s, string(filepath.Separator))
		for i, seg := range segs {
			if j := strings.IndexByte(seg, ':'); j > 0 && !(i == 0 && j == 1 && len(segs) > 1) {
				seg = seg[:j] // a stream, not a drive (C:)
			}
			if t := strings.TrimRight(seg, ". "); t != "" {
				seg = t
			}
			segs[i] = seg
		}
		s = strings.Join(segs, string(filepath.Separator))
	}
	return rawjson.FoldKey(s)
}

// pathWithin reports whether path is root or lies inside it, after both are
// resolved under the reading. A path that cannot be resolved (a symlink
// loop) is an error, which the rule's action turns into a fail-closed
// outcome.
//
// Under either reading a dangling symlink is followed too, because creating
// a file through it writes to its target, and components that do not exist
// are kept as they are, since nothing redirects them yet.
//
// A relative path (or one starting with ~) is an error, not a "no": what it
// means depends on the server's working directory, which the policy cannot
// see, and an error fails closed both ways — an allow rule does not match,
// and a deny rule such as `path.within(args.path, "/etc")` does, so
// "../../etc/passwd" cannot slip past it.
func pathWithin(path, root string, r reading) (bool, error) {
	if !filepath.IsAbs(path) {
		return false, errRelative(path)
	}
	if !filepath.IsAbs(root) {
		return false, fmt.Errorf("root %q is not absolute", root)
	}
	p, err := resolvePath(path, r, nil)
	if err != nil {
		return false, err
	}
	rt, err := resolvePath(root, r, nil)
	if err != nil {
		return false, err
	}
	p, rt = foldName(p, r), foldName(rt, r)
	if p == rt || rt == string(filepath.Separator) {
		return true, nil
	}
	return strings.HasPrefix(p, rt+string(filepath.Separator)), nil
}

func errRelative(path string) error {
	return fmt.Errorf("path %q is not absolute; where it points depends on the server's working directory", path)
}

// pathHasSegment reports whether any segment of the path resolved under the
// reading, or the name of any symlink followed to resolve it, matches one
// of the patterns (path.Match syntax, one segment each). The link names
// count so that a secret directory that is itself a symlink (~/.ssh ->
// dotfiles/ssh, as dotfile managers make it) is still recognised by name.
func pathHasSegment(p string, patterns []string, r reading) (bool, error) {
	if !filepath.IsAbs(p) {
		return false, errRelative(p)
	}
	var names []string
	resolved, err := resolvePath(p, r, &names)
	if err != nil {
		return false, err
	}
	for _, seg := range strings.Split(resolved, string(filepath.Separator)) {
		if seg != "" {
			names = append(names, seg)
		}
	}
	for i, n := range names {
		names[i] = foldName(n, r)
	}
	for _, pat := range patterns {
		fp := foldPath(pat, r)
		for _, n := range names {
			ok, err := path.Match(fp, n)
			if err != nil {
				return false, fmt.Errorf("the segment pattern %q is invalid (%w); expected a name or a glob of one segment such as *.env", pat, err)
			}
			if ok {
				return true, nil
			}
		}
	}
	return false, nil
}

var (
	errSelfLink     = errors.New("the path goes through /proc/self, which names the server's own process when the server opens it, not the gate's")
	errTooManyLinks = errors.New("too many levels of symbolic links")
	errRelativeFile = errors.New("it reads as a relative file path, which a server opens against a working directory the gate does not know")
	errTooManySteps = errors.New("too many components")
	errNulInString  = errors.New("an argument's string holds U+0000: a server reading it as a C string reads only the part before it, so no test of the whole string says what the server reads")
	errNulInPath    = errors.New("the path holds U+0000, which no file name can: a server reading it as a C string opens the part before it, and others refuse it")
)

// resolvePath resolves an absolute path under the reading, following every
// symlink it meets. Under readLexical the text is cleaned first; the
// targets of the links it then meets are read as the kernel reads them,
// because it is the kernel that follows them. When links is not nil, the
// name of every symlink followed is appended to it.
func resolvePath(p string, r reading, links *[]string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		// No file name holds U+0000 (a JSON string may: "\u0000"), and
		// servers disagree on what one that does means: most refuse it,
		// one that reads strings as C strings (cJSON, Lua, a C library's
		// fopen) opens what comes before it. Taken for a missing
		// component below, "/etc/passwd\u0000/../../work/x" read as a
		// path inside /work. Never quoted: it is the caller's text.
		return "", errNulInPath
	}
	if r.lexical() {
		p = filepath.Clean(p)
	}
	sep := string(filepath.Separator)
	rest := strings.Split(p, sep)
	resolved := sep
	n, steps := 0, 0
	missing := false // below a missing component, nothing exists
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if steps++; steps > maxSteps {
			return "", fmt.Errorf("resolving a path of %d bytes: %w; expected at most %d components", len(p), errTooManySteps, maxSteps)
		}
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			missing = false
			continue
		}
		next := filepath.Join(resolved, c)
		if missing {
			resolved = next
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			// Missing, or not ours to see: what is below it is taken as
			// written.
			missing = true
			resolved = next
			continue
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if next == "/proc/self" || next == "/proc/thread-self" {
			// A link whose target depends on who reads it: the gate
			// would resolve its own process's cwd, root or descriptors,
			// and the server opens its own.
			return "", fmt.Errorf("resolving %q: %w", p, errSelfLink)
		}
		n++
		if n > maxLinks {
			return "", fmt.Errorf("resolving %q: %w; expected at most %d", p, errTooManyLinks, maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			// The path error's text has the path unquoted: keep its cause.
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", fmt.Errorf("resolving %q: reading the symlink %q: %w", p, next, err)
		}
		if links != nil {
			*links = append(*links, c)
		}
		if filepath.IsAbs(target) {
			resolved = sep
		}
		// A relative target is relative to the link's directory, which is
		// resolved as it stands.
		rest = append(strings.Split(target, sep), rest...)
	}
	return resolved, nil
}
