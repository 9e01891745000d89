package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds the symlinks one path may pass through, like the kernel's
// ELOOP limit, so that a link loop ends in an error rather than a hang.
const maxLinks = 40

// pathWithin reports whether path is root or lies inside it, after both are
// resolved the way the operating system would resolve them. A path that
// cannot be resolved (a symlink loop) is an error, which the rule's action
// turns into a fail-closed outcome.
//
// A lexical filepath.Clean is not enough: in /work/link/../x the `..` undoes
// the symlink's target, not the word "link", so the components are walked
// in order, each symlink replaced by its target before a later `..` applies.
// A dangling symlink is followed too, because creating a file through it
// writes to its target. Components that do not exist are kept as they are,
// since nothing redirects them yet.
//
// A relative path (or one starting with ~) is an error, not a "no": what it
// means depends on the server's working directory, which the policy cannot
// see, and an error fails closed both ways — an allow rule does not match,
// and a deny rule such as `path.within(args.path, "/etc")` does, so
// "../../etc/passwd" cannot slip past it.
func pathWithin(path, root string) (bool, error) {
	if !filepath.IsAbs(path) {
		return false, fmt.Errorf("path %q is not absolute; where it points depends on the server's working directory", path)
	}
	if !filepath.IsAbs(root) {
		return false, fmt.Errorf("root %q is not absolute", root)
	}
	p, err := resolvePath(path)
	if err != nil {
		return false, err
	}
	r, err := resolvePath(root)
	if err != nil {
		return false, err
	}
	if p == r || r == string(filepath.Separator) {
		return true, nil
	}
	return strings.HasPrefix(p, r+string(filepath.Separator)), nil
}

var errTooManyLinks = errors.New("too many levels of symbolic links")

// resolvePath resolves an absolute path component by component, following
// every symlink it meets and applying `..` to what they resolve to.
func resolvePath(path string) (string, error) {
	sep := string(filepath.Separator)
	rest := strings.Split(path, sep)
	resolved := sep
	links := 0
	missing := false // below a missing component, nothing exists
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
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
		links++
		if links > maxLinks {
			return "", fmt.Errorf("path.within(%q): %w; expected at most %d", path, errTooManyLinks, maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("path.within(%q): reading the symlink %s: %w", path, next, err)
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
