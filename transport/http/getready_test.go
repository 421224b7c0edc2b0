package http_test

import (
	"context"
	"encoding/json"
	nethttp "net/http"
	"sync/atomic"
	"testing"

	"github.com/snodo/snodo/jsonrpc"
	"github.com/snodo/snodo/transport"
	mcphttp "github.com/snodo/snodo/transport/http"
)

// headersIn records when the response headers of a GET reached the client.
type headersIn struct {
	base nethttp.RoundTripper
	got  atomic.Bool
}

func (h *headersIn) RoundTrip(r *nethttp.Request) (*nethttp.Response, error) {
	resp, err := h.base.RoundTrip(r)
	if r.Method == nethttp.MethodGet && err == nil {
		h.got.Store(true)
	}
	return resp, err
}

// A server that sends a request on the standalone GET stream (as the
// TypeScript SDK's server.request() does, and as the conformance suite's
// elicitation-sep1034-client-defaults scenario does) drops it when the
// stream is not open yet. So Notify of notifications/initialized returns
// only once the GET stream's response headers are in: a request sent after
// Connect is never ahead of the stream.
func TestNotifyInitializedWaitsForTheGETStream(t *testing.T) {
	srv := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request, rec recorded) {
		switch r.Method {
		case nethttp.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(nethttp.StatusOK)
			w.(nethttp.Flusher).Flush()
			<-r.Context().Done()
		default:
			w.WriteHeader(nethttp.StatusAccepted)
		}
	})
	rt := &headersIn{base: nethttp.DefaultTransport.(*nethttp.Transport).Clone()}
	defer rt.base.(*nethttp.Transport).CloseIdleConnections()
	tr, err := mcphttp.New(mcphttp.Config{URL: srv.URL, HTTPClient: &nethttp.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	n := &jsonrpc.Notification{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}
	err = tr.Notify(context.Background(), n, transport.NotifyOptions{Headers: []transport.Header{{Name: "MCP-Protocol-Version", Value: "2025-11-25"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !rt.got.Load() {
		t.Fatal("Notify(notifications/initialized) returned before the standalone GET stream was open")
	}
}
