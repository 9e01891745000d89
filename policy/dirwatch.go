package policy

import (
	"slices"

	"github.com/fsnotify/fsnotify"
)

// dirWatcher is what the reloader needs of a file system watcher: events
// that name what changed in the directories and files it was given, and
// whether a watch is still alive (a watched directory that is deleted or
// moved away takes its watch with it). It is used by the reloader's
// goroutine alone: Add, AddFile, Remove, Watching and Close are not called
// concurrently, and the channels are read there too.
//
// On Linux it is the gate's own inotify watch (dirwatch_linux.go). Its
// watch of a directory leaves out the event of every write: a file in the
// policy's directory that is written all the time (the gate's audit log
// beside its policy, most often) would otherwise wake the watcher at every
// line, and the gate would pay for that on every call; fsnotify asks
// inotify for every write and does not export the option to ask for less.
// The policy file's own writes are seen through a watch of the file
// (AddFile). Elsewhere it is fsnotify, whose directory watch sees writes to
// every file in the directory.
type dirWatcher interface {
	// Add watches the names in the directory dir: created, deleted, moved,
	// changed in their attributes, or closed after writing.
	Add(dir string) error
	// AddFile watches the content of the file at path, the inode it names
	// now; called again after the path names another file, it moves there.
	AddFile(path string) error
	// Remove ends the watch of a directory or file.
	Remove(path string) error
	// Watching reports whether the watch of path is still alive.
	Watching(path string) bool
	// Close ends every watch; the channels are closed once it returns.
	Close() error
	events() <-chan fsnotify.Event
	errors() <-chan error
}

// fsnotifyWatcher is fsnotify's watcher as a dirWatcher.
type fsnotifyWatcher struct{ *fsnotify.Watcher }

func newFsnotifyWatcher() (dirWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return fsnotifyWatcher{w}, nil
}

// AddFile does nothing: fsnotify's watch of the file's directory already
// reports the file's writes.
func (w fsnotifyWatcher) AddFile(string) error          { return nil }
func (w fsnotifyWatcher) Watching(path string) bool     { return slices.Contains(w.WatchList(), path) }
func (w fsnotifyWatcher) events() <-chan fsnotify.Event { return w.Events }
func (w fsnotifyWatcher) errors() <-chan error          { return w.Errors }
