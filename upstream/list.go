package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// maxListPages stops a server whose cursors never end.
const maxListPages = 1000

// ListItems lists every page of a list method (tools/list, prompts/list,
// resources/list, resources/templates/list) and hands each entry of field,
// which must be an object, to fn, in the server's order; an error from fn
// ends the listing with it. It refuses a repeated cursor and more than
// maxListPages pages, so a hostile server cannot keep the caller listing
// forever; ctx bounds the time. An error of the call itself is wrapped
// (%w), so its rpc.Error code can be read; a JSON error names no byte of
// the server's (rpc.DescribeJSONError), since it may reach a log.
func ListItems(ctx context.Context, s *Session, method, field string, fn func(json.RawMessage) error) error {
	cursor := ""
	seen := map[string]bool{}
	for range maxListPages {
		params := json.RawMessage("{}")
		if cursor != "" {
			b, err := json.Marshal(map[string]string{"cursor": cursor})
			if err != nil {
				return err
			}
			params = b
		}
		res, err := s.Call(ctx, method, params)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(res, &page); err != nil {
			return fmt.Errorf("%s: the result is not an object: %w", method, rpc.DescribeJSONError(err))
		}
		raw, ok := page[field]
		if !ok {
			return fmt.Errorf("%s: the result has no %q array; expected one", method, field)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("%s: %q is not an array of objects: %w", method, field, rpc.DescribeJSONError(err))
		}
		for _, it := range items {
			if len(it) == 0 || it[0] != '{' {
				return fmt.Errorf("%s: an entry of %q is not an object", method, field)
			}
			if err := fn(it); err != nil {
				return err
			}
		}
		var next string
		if nc, ok := page["nextCursor"]; ok && string(nc) != "null" {
			if err := json.Unmarshal(nc, &next); err != nil {
				return fmt.Errorf("%s: nextCursor is not a string: %w", method, rpc.DescribeJSONError(err))
			}
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return fmt.Errorf("%s: the server repeated the cursor %q", method, next)
		}
		seen[next] = true
		cursor = next
	}
	return fmt.Errorf("%s: more than %d pages; expected a list that ends", method, maxListPages)
}

// ListNames lists every page of a list method (tools/list, prompts/list)
// and returns the name of each entry of field, in the server's order.
func ListNames(ctx context.Context, s *Session, method, field string) ([]string, error) {
	var names []string
	err := ListItems(ctx, s, method, field, func(item json.RawMessage) error {
		var it struct {
			Name *string `json:"name"`
		}
		if err := json.Unmarshal(item, &it); err != nil {
			return fmt.Errorf("%s: entry %d of %q: %w", method, len(names), field, rpc.DescribeJSONError(err))
		}
		if it.Name == nil {
			return fmt.Errorf("%s: entry %d of %q has no name; expected a string name", method, len(names), field)
		}
		names = append(names, *it.Name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}
