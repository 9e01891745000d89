package proxy

import (
	"fmt"
	"strings"

	"github.com/mcp-gate/mcp-gate/guard"
)

// route finds the server a resource URI goes to: the one that lists it,
// else the one whose URI template produces it (lookupOwner; either claimed
// by two servers is ambiguous). A URI that no server lists and no template
// produces goes, when every server's resources are known (complete), to
// the one server that has resources at all: a server may serve URIs it
// does not list (a subscription to a resource that does not exist yet,
// a dynamic one), and with only one candidate nothing is guessed; with
// several, the URI is refused as ambiguous rather than handed to one that
// could answer for another's. "" with no error means no server has
// resources, or not every list is in yet.
func (ix *resourceIndex) route(uri string, order []string, complete bool) (string, error) {
	s, err := ix.lookupOwner(uri, order)
	if err != nil || s != "" || !complete {
		return s, err
	}
	var capable []string
	for _, name := range order {
		l := ix.servers[name]
		if l == nil || !l.loaded {
			return "", nil // a server not listed yet may be the one
		}
		if l.capable {
			capable = append(capable, name)
		}
	}
	switch len(capable) {
	case 0:
		return "", nil
	case 1:
		return capable[0], nil
	}
	return "", errUnrouted{uri, capable}
}

// errUnrouted is a URI no server lists or templates while several have
// resources.
type errUnrouted struct {
	uri     string
	servers []string
}

func (e errUnrouted) Error() string {
	return fmt.Sprintf("resource %s is listed by no server and produced by no server's URI template, and servers %s all have resources; the gate will not pick one",
		guard.Quote(e.uri, guard.ShowName), strings.Join(e.servers, " and "))
}
