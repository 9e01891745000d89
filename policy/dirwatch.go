package policy

import "github.com/fsnotify/fsnotify"

// dirWatcher is what the reloader needs of a directory watcher: events
// that name what changed in the directories it was given. It is used by
// the reloader's goroutine alone (Add, Remove and Close are not called
// concurrently); the channels are read there too.
//
// On Linux it is the gate's own inotify watch (dirwatch_linux.go), which
// leaves out the event of every write: a file in the policy's directory
// that is written all the time (the gate's audit log beside its policy,
// most often) would otherwise wake the watcher at every line, and the gate
// pays for that on every call. fsnotify asks inotify for every write and
// does not export the option to ask for less. Elsewhere it is fsnotify.
type dirWatcher interface {
	Add(dir string) error
	Remove(dir string) error
	Close() error
	// Events and Errors are closed once the watcher is closed.
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

func (w fsnotifyWatcher) events() <-chan fsnotify.Event { return w.Events }
func (w fsnotifyWatcher) errors() <-chan error          { return w.Errors }
