package rpc

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// routerFuncs is a Handler that is also a Router.
type routerFuncs struct {
	funcs
	route func(ctx context.Context, req *Message) context.Context
}

func (r routerFuncs) Route(ctx context.Context, req *Message) context.Context {
	return r.route(ctx, req)
}

type routeKey struct{}

// Route runs on the read loop, before the next message is read: a request
// the peer sent before answering our call is routed while the call is
// still pending, however late its handler runs.
func TestRouterSeesCallsInArrivalOrder(t *testing.T) { eachWire(t, testRouterSeesCallsInArrivalOrder) }

func testRouterSeesCallsInArrivalOrder(t *testing.T, w wire) {
	callDone := make(chan struct{})
	h := routerFuncs{
		route: func(ctx context.Context, req *Message) context.Context {
			state := "pending"
			select {
			case <-callDone:
				state = "done"
			default:
			}
			return context.WithValue(ctx, routeKey{}, state)
		},
		funcs: funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
			<-callDone // the handler itself runs only after the call returned
			state, _ := ctx.Value(routeKey{}).(string)
			return json.Marshal(state)
		}},
	}
	p := newPeer(t, w, h, Options{})
	res := p.callAsync(context.Background(), "work", `{}`)
	work := p.recvMsg()
	p.send(`{"jsonrpc":"2.0","id":"ask","method":"ask","params":{}}`)
	p.send(`{"jsonrpc":"2.0","id":` + string(work.ID) + `,"result":{}}`)
	if r := wait(t, res, "the call"); r.err != nil {
		t.Fatal(r.err)
	}
	close(callDone)
	if line := p.recv(); !strings.Contains(line, `"result":"pending"`) {
		t.Fatalf("the request was routed after the call's response: %s", line)
	}
}
