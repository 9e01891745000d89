// This file is not part of the gate. TestRaceReportsReachTheSuite adds it
// to package main (cmd/mcp-gate) through `go build -overlay`, for a gate
// built with -race that races as it starts and then serves as usual: the
// suite's race reporting must catch it whoever starts the gate.
package main

var racehookCounter int

func init() {
	done := make(chan struct{})
	go func() {
		racehookCounter++ // unsynchronized with the write below: a data race
		close(done)
	}()
	racehookCounter++
	<-done
}
