package main

import (
	"encoding/json"
	"os"
)

// Lenient: a file server whose JSON decoder matches member names without
// regard to case, as Go's encoding/json does (mcp-go and most hand-written
// Go servers read params this way): it takes "Arguments" for arguments and
// "Path" for path, Unicode case folding included. The gate must decide on
// what such a server reads, not on the exact spelling alone.
func lenientHandlers() rawHandlers {
	return rawHandlers{
		init:      rawInit,
		toolsList: `{"tools":[{"name":"read_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}`,
		calls: map[string]func(*rawConn, string, string){
			"read_file": func(c *rawConn, id, params string) {
				var p struct {
					Arguments struct {
						Path string `json:"path"`
					} `json:"arguments"`
				}
				if err := json.Unmarshal([]byte(params), &p); err != nil || p.Arguments.Path == "" {
					c.errorResp(id, `{"code":-32602,"message":"path is required"}`)
					return
				}
				b, err := os.ReadFile(p.Arguments.Path)
				if err != nil {
					c.errorResp(id, `{"code":-32603,"message":"cannot read"}`)
					return
				}
				text, _ := json.Marshal(string(b))
				c.result(id, `{"content":[{"type":"text","text":`+string(text)+`}]}`)
			},
		},
	}
}
