package rpc

import (
	"context"
	"testing"
	"time"
)

// A reader that stops reading its peer because the send queue is at its
// bound (awaitRoom), with no writer waiting for room, is woken when the
// queued bytes are released: the room channel it waits on is closed even
// though release closes it only when someone took it.
func TestByteBoundWakesReaderAwaitingRoom(t *testing.T) {
	b := newByteBound(10)
	if !b.tryReserve(10) {
		t.Fatal("an empty queue refused a message")
	}
	done := make(chan error, 1)
	go func() { done <- b.awaitRoom(context.Background(), nil, nil) }()
	time.Sleep(20 * time.Millisecond) // let it wait (it returns either way)
	b.release(10)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader awaiting room was not woken by the release")
	}
	// Releases nobody waits for make no channel.
	if !b.tryReserve(4) {
		t.Fatal("no room after the release")
	}
	room := b.room
	b.release(4)
	if b.room != room {
		t.Error("a release with nobody waiting replaced the room channel")
	}
}
