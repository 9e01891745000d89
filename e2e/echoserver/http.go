package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// serveHTTP serves the echo tools over Streamable HTTP at /mcp on addr: a
// POST of one message is answered with a JSON body (202 for a notification
// or a response); GET is 405 (the server offers no stream, which the
// specification allows) and DELETE 204. An initialize answer carries an
// Mcp-Session-Id, which later requests may send back; it is not checked,
// since a benchmark's upstream has nothing to keep per session. The URL is
// printed on stdout once listening.
func serveHTTP(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return fmt.Errorf("%s is not a loopback address: the echo server is a test tool", addr)
	}
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			w.Header().Set("Allow", "POST, DELETE")
			http.Error(w, "Method Not Allowed: this server offers no GET stream", http.StatusMethodNotAllowed)
			return
		}
		in := bufs.Get().(*bytes.Buffer)
		out := bufs.Get().(*bytes.Buffer)
		defer func() { in.Reset(); out.Reset(); bufs.Put(in); bufs.Put(out) }()
		if _, err := io.Copy(in, http.MaxBytesReader(w, r.Body, maxBlob)); err != nil {
			http.Error(w, "Bad Request: reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var blobs blobCache // one per request: requests run concurrently
		blobs.size = -1
		answer(out, in.Bytes(), &blobs)
		if out.Len() == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if bytes.Contains(in.Bytes(), []byte(`"method":"initialize"`)) {
			var id [16]byte
			rand.Read(id[:])
			w.Header().Set("Mcp-Session-Id", hex.EncodeToString(id[:]))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out.Bytes())
	})
	fmt.Fprintf(os.Stdout, "http://%s/mcp\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}
