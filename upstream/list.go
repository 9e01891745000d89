package upstream

import (
	"context"
	"encoding/json"
	"fmt"
)

// maxListPages stops a server whose cursors never end.
const maxListPages = 1000

// ListNames lists every page of a list method (tools/list, prompts/list)
// and returns the name of each entry of field, in the server's order. It
// refuses a repeated cursor and more than maxListPages pages, so a hostile
// server cannot keep the caller listing forever; ctx bounds the time.
func ListNames(ctx context.Context, s *Session, method, field string) ([]string, error) {
	var names []string
	cursor := ""
	seen := map[string]bool{}
	for range maxListPages {
		params := json.RawMessage("{}")
		if cursor != "" {
			b, err := json.Marshal(map[string]string{"cursor": cursor})
			if err != nil {
				return nil, err
			}
			params = b
		}
		res, err := s.Call(ctx, method, params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(res, &page); err != nil {
			return nil, fmt.Errorf("%s: the result is not an object: %w", method, err)
		}
		var items []struct {
			Name *string `json:"name"`
		}
		raw, ok := page[field]
		if !ok {
			return nil, fmt.Errorf("%s: the result has no %q array; expected one", method, field)
		}
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("%s: %q is not an array of objects: %w", method, field, err)
		}
		for i, it := range items {
			if it.Name == nil {
				return nil, fmt.Errorf("%s: entry %d of %q has no name; expected a string name", method, i, field)
			}
			names = append(names, *it.Name)
		}
		var next string
		if nc, ok := page["nextCursor"]; ok && string(nc) != "null" {
			if err := json.Unmarshal(nc, &next); err != nil {
				return nil, fmt.Errorf("%s: nextCursor is not a string: %w", method, err)
			}
		}
		if next == "" {
			return names, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: the server repeated the cursor %q", method, next)
		}
		seen[next] = true
		cursor = next
	}
	return nil, fmt.Errorf("%s: more than %d pages; expected a list that ends", method, maxListPages)
}
