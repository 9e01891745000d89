// Package protocol holds the MCP wire vocabulary the gate itself writes:
// the protocol revisions it speaks and the few result shapes it builds
// (a refused tool call). Everything the gate relays stays raw JSON; these
// types exist only for what the gate says in its own name.
//
// The gate keeps its own small vocabulary instead of linking the go-sdk,
// which would add a third to the binary and decodes lossily (unknown
// fields, integers past 2^53). The go-sdk remains in the tests as the
// independent client and server that proves the relay faithful.
package protocol

// Latest is the protocol revision the gate speaks to upstreams.
const Latest = "2025-11-25"

// Known lists the revisions the gate accepts from upstreams, newest first.
// It is a function so that no caller can change the list.
func Known() []string { return []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} }

// TextContent is a text content block.
type TextContent struct {
	Type string `json:"type"` // always "text"
	Text string `json:"text"`
}

// CallToolResult is the result of tools/call as the gate builds it: text
// content, and isError set for a refusal the model should read.
type CallToolResult struct {
	Content []TextContent `json:"content"`
	IsError bool          `json:"isError,omitempty"`
}

// ToolError returns the result of a tools/call the gate refused, with text
// telling the model (and through it the user) why.
func ToolError(text string) CallToolResult {
	return CallToolResult{Content: []TextContent{{Type: "text", Text: text}}, IsError: true}
}
