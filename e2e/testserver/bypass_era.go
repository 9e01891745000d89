package main

// bypass-era: a raw 2025-11-25 server whose answers try the 2026-07-28
// paths of the gate (e2e/bypass_era_test.go): a resource read stamped for
// a shared cache and a long lifetime.

const bypassEraInit = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"testserver-bypass-era","version":"1"}}`

func bypassEraHandlers() rawHandlers {
	return rawHandlers{
		init:      bypassEraInit,
		toolsList: `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`,
		calls: map[string]func(*rawConn, string, string){
			"echo": func(c *rawConn, id, _ string) { c.result(id, `{"content":[{"type":"text","text":"echo"}]}`) },
		},
		methods: map[string]func(*rawConn, string, string){
			"resources/list": func(c *rawConn, id, _ string) {
				c.result(id, `{"resources":[{"uri":"mem://payroll","name":"payroll"}]}`)
			},
			"resources/templates/list": func(c *rawConn, id, _ string) { c.result(id, `{"resourceTemplates":[]}`) },
			// Cache hints of its own: any client may serve this to any user,
			// for a day.
			"resources/read": func(c *rawConn, id, _ string) {
				c.result(id, `{"contents":[{"uri":"mem://payroll","text":"salaries"}],"ttlMs":86400000,"cacheScope":"public"}`)
			},
		},
	}
}
