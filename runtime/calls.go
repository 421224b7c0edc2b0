package runtime

import (
	"context"
	"errors"
	"io"

	"github.com/snodo/snodo"
	shttp "github.com/snodo/snodo/transport/http"
)

// Call runs one client call, explaining a connection error with the
// server's exit status and stderr tail (see Explain). Progress goes to the
// progress module when there is one (attached to the client, so that
// calls made through Client use it too), else to show (which may be nil).
// call receives the context and options to pass to the client's method.
//
// When the progress module answers "cancel" or fails, the call is
// cancelled on the server and Call returns the module's error (a handler
// error, -32603).
func (r *Runner) Call(ctx context.Context, show func(snodo.Progress), call func(ctx context.Context, opts ...snodo.CallOption) error) error {
	var opts []snodo.CallOption
	if r.progress == nil && show != nil {
		opts = append(opts, snodo.WithProgress(show))
	}
	if err := call(ctx, opts...); err != nil {
		return r.Explain(err)
	}
	return nil
}

// Listen opens a subscription with filter and hands each event to the
// subscriber module when there is one, else to each (nil drops them). It returns the filter
// the server accepted through accepted (called once, before the first
// event), and ends when ctx ends (nil error), the server ends the stream
// (nil), the subscriber module stops it (nil, or its error if it failed),
// each returns an error, or the connection goes (a -32000 error).
func (r *Runner) Listen(ctx context.Context, filter snodo.SubscriptionFilter, accepted func(snodo.SubscriptionFilter), each func(snodo.Event) error) error {
	got, sub, err := r.client.Listen(ctx, filter)
	if err != nil {
		return r.Explain(err)
	}
	defer sub.Close()
	if accepted != nil {
		accepted(got)
	}
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				if connErr := r.connErr(); connErr != nil && ctx.Err() == nil {
					return r.Explain(connErr)
				}
				return nil
			}
			return r.Explain(err)
		}
		if r.subscriber != nil {
			// The module saw it (the client's event consumer); it ends
			// the subscription when it stops it.
			continue
		}
		if each != nil {
			if err := each(ev); err != nil {
				return err
			}
		}
	}
}

// HasProgressModule reports whether progress goes to a Wasm module.
func (r *Runner) HasProgressModule() bool { return r.progress != nil }

// HasSubscriber reports whether events go to a Wasm module.
func (r *Runner) HasSubscriber() bool { return r.subscriber != nil }

// connErr is why the server process's connection, or a remote server's
// HTTP+SSE stream, ended, if it did; nil for Streamable HTTP, whose
// connection is a request at a time.
func (r *Runner) connErr() error {
	if s, ok := r.remote.(*shttp.SSE); ok {
		return s.Err()
	}
	if r.conn == nil {
		return nil
	}
	return r.conn.Err()
}

// Done returns a channel closed when the server's connection has ended:
// the server process exited (or Close), or a remote server's HTTP+SSE
// stream ended. It is nil, which never closes, for Streamable HTTP, whose
// connection is a request at a time (each failure is that request's).
func (r *Runner) Done() <-chan struct{} {
	if s, ok := r.remote.(*shttp.SSE); ok {
		return s.Done()
	}
	if r.conn == nil {
		return nil
	}
	return r.conn.Done()
}
