package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// maxListPages stops a server whose cursors never end.
const maxListPages = 1000

// Pages calls a list method (tools/list, resources/list, ...) page by page
// and hands each entry of field to fn, in the server's order. An entry that
// is not an object fails the listing. It refuses a repeated cursor and more
// than maxListPages pages, so a hostile server cannot keep the caller
// listing forever; ctx bounds the time.
func Pages(ctx context.Context, s *Session, method, field string, fn func(item json.RawMessage)) error {
	return PagesMeta(ctx, s, method, field, fn, nil)
}

// PagesMeta is Pages that also hands meta the list-level "_meta" of the
// first page (nil when it has none); meta may be nil.
func PagesMeta(ctx context.Context, s *Session, method, field string, fn func(item json.RawMessage), meta func(json.RawMessage)) error {
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
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		var items []json.RawMessage
		raw, ok := rawjson.Get(res, field)
		if !ok {
			return fmt.Errorf("%s: the result has no %q array; expected one", method, field)
		}
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("%s: %q is not an array of objects: %w", method, field, rpc.DescribeJSONError(err))
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return fmt.Errorf("%s: bad nextCursor: %w", method, rpc.DescribeJSONError(err))
		}
		if meta != nil && cursor == "" {
			m, _ := rawjson.Get(res, "_meta")
			meta(m)
		}
		for _, it := range items {
			if len(it) == 0 || it[0] != '{' {
				return fmt.Errorf("%s: an entry of %q is not an object", method, field)
			}
			fn(it)
		}
		if page.NextCursor == "" {
			return nil
		}
		if seen[page.NextCursor] {
			// The cursor is the server's text: described, not quoted.
			return fmt.Errorf("%s: the server repeated the cursor %s", method, audit.PayloadString(page.NextCursor))
		}
		seen[page.NextCursor] = true
		cursor = page.NextCursor
	}
	return fmt.Errorf("%s: more than %d pages; expected a list that ends", method, maxListPages)
}

// ListNames lists every page of a list method (tools/list, prompts/list)
// through Pages and returns the name of each entry of field, in the
// server's order. An entry without a string name fails the listing.
func ListNames(ctx context.Context, s *Session, method, field string) ([]string, error) {
	var names []string
	var bad error
	err := Pages(ctx, s, method, field, func(item json.RawMessage) {
		if bad != nil {
			return
		}
		name, ok := rawjson.GetString(item, "name")
		if !ok {
			bad = fmt.Errorf("%s: entry %d of %q has no name; expected a string name", method, len(names), field)
			return
		}
		names = append(names, name)
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, err
	}
	return names, nil
}
