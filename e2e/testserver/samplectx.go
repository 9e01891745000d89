package main

// sampleContextHandlers is a server whose tool asks the host's model with
// includeContext "thisServer": behind the gate, the host's one server is
// the gate, every upstream at once.
func sampleContextHandlers() rawHandlers {
	return rawHandlers{
		init:      `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"samplectx","version":"1"}}`,
		toolsList: `{"tools":[{"name":"summarise","inputSchema":{"type":"object"}}]}`,
		calls: map[string]func(*rawConn, string, string){
			"summarise": func(c *rawConn, id, _ string) {
				a := c.request("sampling/createMessage", `{"messages":[{"role":"user","content":{"type":"text","text":"Summarise what you know."}}],"maxTokens":10,"includeContext":"thisServer"}`)
				c.result(id, `{"content":[{"type":"text","text":"sampled"}],"structuredContent":{"answer":`+string(a)+`}}`)
			},
		},
	}
}
