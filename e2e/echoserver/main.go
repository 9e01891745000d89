// Command echoserver is the lightest MCP server this repository can offer:
// newline-delimited JSON-RPC on stdin and stdout, written without the go-sdk,
// so that a benchmark of the gate measures the gate and not an SDK. It is a
// test tool (the benchmark in e2e/bench and the load generator's smoke test
// use it), not something the gate ships.
//
// It answers initialize, ping, tools/list and tools/call for two tools:
//
//	echo {"text": S}   returns S as one text content item
//	blob {"bytes": N}  returns N bytes of text ("xxxx…")
//
// A request whose _meta names protocol 2026-07-28 is answered as that
// revision's server does: server/discover lists it, and every result is
// marked complete; a benchmark can so drive it as a 2026-07-28 host would
// (loadgen's Client.Discover), and the gate can be pinned to speak that
// revision to it. Requests are answered one at a time in arrival order; replies are flushed
// when no more input is already buffered, so a pipelined burst is answered
// with few writes, as a real server reading a pipe would.
//
// With -http ADDR it serves the same tools over Streamable HTTP instead
// (http.go): raw net/http, every request answered with a JSON body, so that
// an HTTP benchmark of the gate (e2e/httpbench) has an upstream lighter
// than the gate itself.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// request is the part of a JSON-RPC message this server reads.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
		Arguments       struct {
			Text  string `json:"text"`
			Bytes int    `json:"bytes"`
		} `json:"arguments"`
		Meta struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	} `json:"params"`
}

// modernVersion is the stateless revision (see the package doc).
const modernVersion = "2026-07-28"

// maxBlob bounds the blob tool, so that a typo cannot exhaust memory.
const maxBlob = 64 << 20

const toolsList = `{"tools":[` +
	`{"name":"echo","description":"Returns its text argument.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},` +
	`{"name":"blob","description":"Returns the given number of bytes of text.","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}},"required":["bytes"]}}` +
	`]}`

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this loopback host:port (port 0 picks one) instead of stdio; the URL is printed on stdout")
	flag.Parse()
	if *addr != "" {
		if err := serveHTTP(*addr); err != nil {
			fmt.Fprintln(os.Stderr, "echoserver:", err)
			os.Exit(1)
		}
		return
	}
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "echoserver:", err)
		os.Exit(1)
	}
}

func serve(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	blobs := blobCache{size: -1}
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long request line: collect it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading stdin: %w", err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			answer(w, line, &blobs)
		}
		if err == io.EOF {
			return w.Flush()
		}
		if r.Buffered() == 0 {
			if ferr := w.Flush(); ferr != nil {
				return fmt.Errorf("writing stdout: %w", ferr)
			}
		}
	}
}

// blobCache keeps the last blob result, reused while the size is the same.
type blobCache struct {
	blob []byte
	size int
}

// writer is what a reply is written to: the stdout buffer, or an HTTP
// reply's.
type writer interface {
	io.Writer
	io.StringWriter
}

// answer writes the reply to one message (nothing for a notification).
func answer(w writer, line []byte, blobs *blobCache) {
	var req request
	if jerr := json.Unmarshal(line, &req); jerr != nil {
		writeError(w, []byte("null"), -32700, "parse error: "+jerr.Error())
		return
	}
	if len(req.ID) == 0 { // notifications get no answer
		return
	}
	modern := req.Params.Meta.ProtocolVersion == modernVersion
	if modern {
		w = completeWriter{w}
	}
	switch req.Method {
	case "server/discover":
		if !modern {
			writeError(w, req.ID, -32601, "method not found")
			break
		}
		writeResult(w, req.ID, `{"supportedVersions":["`+modernVersion+`"],"capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}}`)
	case "initialize":
		v := req.Params.ProtocolVersion
		if v == "" {
			v = "2025-06-18"
		}
		q, _ := json.Marshal(v)
		writeResult(w, req.ID, `{"protocolVersion":`+string(q)+`,"capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}}`)
	case "ping":
		writeResult(w, req.ID, `{}`)
	case "tools/list":
		writeResult(w, req.ID, toolsList)
	case "tools/call":
		switch req.Params.Name {
		case "echo":
			q, _ := json.Marshal(req.Params.Arguments.Text)
			writeResult(w, req.ID, `{"content":[{"type":"text","text":`+string(q)+`}]}`)
		case "blob":
			n := req.Params.Arguments.Bytes
			if n < 0 || n > maxBlob {
				writeError(w, req.ID, -32602, "bytes must be between 0 and "+strconv.Itoa(maxBlob))
				break
			}
			if n != blobs.size {
				blobs.blob = append([]byte(`{"content":[{"type":"text","text":"`), strings.Repeat("x", n)...)
				blobs.blob = append(blobs.blob, `"}]}`...)
				blobs.size = n
			}
			writeResultBytes(w, req.ID, blobs.blob)
		default:
			writeError(w, req.ID, -32602, "unknown tool")
		}
	default:
		writeError(w, req.ID, -32601, "method not found")
	}
}

// completeWriter writes results marked complete, as 2026-07-28 has them:
// `"resultType":"complete",` goes in front of the result's first member.
type completeWriter struct{ writer }

func writeComplete[T string | []byte](c completeWriter, id json.RawMessage, result T) {
	c.WriteString(`{"jsonrpc":"2.0","id":`)
	c.Write(id)
	c.WriteString(`,"result":{"resultType":"complete"`)
	if len(result) > 2 && result[1] != '}' {
		c.WriteString(",")
	}
	c.Write([]byte(result[1:]))
	c.WriteString("}\n")
}

func writeResult(w writer, id json.RawMessage, result string) {
	if c, ok := w.(completeWriter); ok {
		writeComplete(c, id, result)
		return
	}
	w.WriteString(`{"jsonrpc":"2.0","id":`)
	w.Write(id)
	w.WriteString(`,"result":`)
	w.WriteString(result)
	w.WriteString("}\n")
}

func writeResultBytes(w writer, id json.RawMessage, result []byte) {
	if c, ok := w.(completeWriter); ok {
		writeComplete(c, id, result)
		return
	}
	w.WriteString(`{"jsonrpc":"2.0","id":`)
	w.Write(id)
	w.WriteString(`,"result":`)
	w.Write(result)
	w.WriteString("}\n")
}

func writeError(w writer, id json.RawMessage, code int, msg string) {
	q, _ := json.Marshal(msg)
	w.WriteString(`{"jsonrpc":"2.0","id":`)
	w.Write(id)
	w.WriteString(`,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(q) + `}}` + "\n")
}
