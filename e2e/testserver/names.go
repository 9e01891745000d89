package main

// Colons: a server whose tool names hold colons and glob characters, the
// names an upstream may pick to slip past a policy's globs (issue #8): a
// glob such as mcp:shell:* must cover every one of them.
func colonHandlers() rawHandlers {
	ok := func(c *rawConn, id, _ string) {
		c.result(id, `{"content":[{"type":"text","text":"ran"}]}`)
	}
	return rawHandlers{
		init: rawInit,
		toolsList: `{"tools":[` +
			`{"name":"a:b","inputSchema":{"type":"object"}},` +
			`{"name":"rm:rf:x","inputSchema":{"type":"object"}},` +
			`{"name":"x*y","inputSchema":{"type":"object"}},` +
			`{"name":"plain","inputSchema":{"type":"object"}}]}`,
		calls: map[string]func(*rawConn, string, string){"a:b": ok, "rm:rf:x": ok, "x*y": ok, "plain": ok},
	}
}
