package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/safetext"
)

// URL-mode elicitation in the terminal: the server asks the user to open a
// page of its own (an OAuth consent, a payment, an API key form) whose data
// must not pass through the client. snodo-run shows the page's host and
// URL, escaped (the server's text is hostile), never opens or fetches it,
// and asks the user to open it; the answer is read from stdin.

// URL elicitation settings (--url-elicitation).
const (
	urlElicitAuto = "auto" // on when stdin is a terminal
	urlElicitOn   = "on"
	urlElicitOff  = "off"
)

// maxURLAnswerTries bounds the questions asked for one elicitation.
const maxURLAnswerTries = 3

// urlPrompter asks the user, one elicitation at a time.
type urlPrompter struct {
	mu  sync.Mutex
	in  *bufio.Reader
	out io.Writer
	// echo ends the prompt's line when the input is not a terminal,
	// which would have echoed the user's Enter.
	echo bool
}

func newURLPrompter(in io.Reader, out io.Writer) *urlPrompter {
	return &urlPrompter{in: bufio.NewReader(in), out: out, echo: !isTerminal(in)}
}

// HandleRequest implements snodo.Handler for URL-mode elicitation/create:
// Enter (or y) accepts — the user consents to open the page; n declines;
// the end of input, or the call ending, cancels.
func (p *urlPrompter) HandleRequest(ctx context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
	req, err := snodo.ParseElicitRequest(params)
	if err != nil {
		return nil, err
	}
	host := req.URL
	if u, err := url.Parse(req.URL); err == nil {
		host = u.Host
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "The server asks you to open a page on %s:\n  %s\n  %s\n",
		safetext.Escape(host, false), safetext.Escape(req.Message, false), safetext.Escape(req.URL, false))
	for range maxURLAnswerTries {
		fmt.Fprint(p.out, "Open it in your browser and press Enter when done (n: decline): ")
		line, err := p.readLine(ctx)
		if err != nil || p.echo {
			fmt.Fprintln(p.out)
		}
		if err != nil {
			return action("cancel"), nil
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "", "y", "yes":
			return action("accept"), nil
		case "n", "no":
			return action("decline"), nil
		}
	}
	return action("cancel"), nil
}

// readLine reads one line, or fails when ctx ends or input does.
func (p *urlPrompter) readLine(ctx context.Context) (string, error) {
	type read struct {
		line string
		err  error
	}
	done := make(chan read, 1)
	go func() {
		line, err := p.in.ReadString('\n')
		if err == io.EOF && line != "" {
			err = nil
		}
		done <- read{line, err}
	}()
	select {
	case r := <-done:
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// completed is the client's hook for notifications/elicitation/complete
// (2025-11-25): the server says the page's interaction is done.
func (p *urlPrompter) completed(elicitationID string) {
	fmt.Fprintf(p.out, "The server says the interaction %s is complete.\n", safetext.Escape(elicitationID, false))
}

func action(a string) json.RawMessage { return json.RawMessage(`{"action":"` + a + `"}`) }

// printURLElicitationsRequired shows the pages of a -32042
// URLElicitationRequiredError (2025-11-25), escaped, before the error
// object: the request can go on once the user has been there.
func printURLElicitationsRequired(w io.Writer, err error) {
	els, ok := snodo.URLElicitationsRequired(err)
	if !ok {
		return
	}
	for _, r := range els {
		host := ""
		if u, err := url.Parse(r.URL); err == nil {
			host = u.Host
		}
		fmt.Fprintf(w, "The server needs you to open a page on %s first:\n  %s\n  %s\n",
			safetext.Escape(host, false), safetext.Escape(r.Message, false), safetext.Escape(r.URL, false))
	}
	fmt.Fprintln(w, "Then run the command again.")
}
