package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/approvals"
)

// watchScreen is a strings.Builder safe for watchLoop writing while the
// test reads.
type watchScreen struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *watchScreen) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *watchScreen) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A "y" that comes as a question replaces the one on screen (closed while
// the human typed) is not taken as the answer to the new one; the same
// "y" once the question has been on screen for watchSettle is.
func TestWatchAnswerTypedForThePreviousQuestion(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan approvals.Event)
	lines := make(chan string)
	out := &watchScreen{}
	var mu sync.Mutex
	var answered []string
	done := make(chan error, 1)
	go func() {
		done <- watchLoop(ctx, events, lines, out, func(op, id, scope string) error {
			mu.Lock()
			defer mu.Unlock()
			answered = append(answered, op+" "+id)
			return nil
		})
	}()
	q := func(id string) approvals.Event {
		return approvals.Event{Event: "asked", Question: &approvals.Question{ID: id, Message: "question " + id, Asked: time.Now(), Expires: time.Now().Add(time.Minute)}}
	}
	events <- q("a")
	events <- q("b")
	time.Sleep(watchSettle + 100*time.Millisecond) // the human reads a
	events <- approvals.Event{Event: "closed", ID: "a", Outcome: "withdrawn"}
	lines <- "y" // typed for a, arrives as b is shown
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "ignored: that answer came as this question appeared") {
		if time.Now().After(deadline) {
			t.Fatalf("the early answer was not refused:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(answered) != 0 {
		t.Fatalf("answered %v with the y typed for the question before", answered)
	}
	mu.Unlock()
	time.Sleep(watchSettle + 100*time.Millisecond) // the human reads b
	lines <- "y"
	deadline = time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(answered)
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a considered y was not taken:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if answered[0] != "approve b" {
		t.Fatalf("answered %v", answered)
	}
	cancel()
	<-done
}
