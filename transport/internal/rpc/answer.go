package rpc

import (
	"encoding/json"
	"errors"

	"github.com/snodo/snodo/jsonrpc"
)

// Answer is the response to a server request: an error that is not a
// *jsonrpc.Error is sent as -32603 with its text, a nil result as an
// empty object.
func Answer(id jsonrpc.ID, result json.RawMessage, err error) *jsonrpc.Response {
	resp := &jsonrpc.Response{ID: id}
	switch {
	case err != nil:
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		resp.Error = je
	case len(result) == 0:
		resp.Result = json.RawMessage("{}")
	default:
		resp.Result = result
	}
	return resp
}

// InvalidAnswer is the response sent instead of an answer that could not
// be encoded (a result that is not valid JSON): the server still gets
// exactly one answer.
func InvalidAnswer(id jsonrpc.ID, err error) *jsonrpc.Response {
	return jsonrpc.NewErrorResponse(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "invalid answer: " + err.Error()})
}

// EncodeAnswer encodes resp, an answer, or its InvalidAnswer.
func EncodeAnswer(resp *jsonrpc.Response) []byte {
	body, err := jsonrpc.Encode(resp)
	if err != nil {
		body, _ = jsonrpc.Encode(InvalidAnswer(resp.ID, err))
	}
	return body
}

// Cancelled returns the notifications/cancelled that tells the server the
// request id is given up, with reason when it is not empty.
func Cancelled(id jsonrpc.ID, reason string) *jsonrpc.Notification {
	return &jsonrpc.Notification{Method: MethodCancelled, Params: cancelledParams(id, reason)}
}

// ProgressFailed is the reason a request is given up for when its
// progress function failed with err.
func ProgressFailed(err error) string { return "progress function failed: " + err.Error() }

func cancelledParams(id jsonrpc.ID, reason string) json.RawMessage {
	params := append([]byte(`{"requestId":`), id.AppendJSON(nil)...)
	if reason != "" {
		r, _ := json.Marshal(reason)
		params = append(append(params, `,"reason":`...), r...)
	}
	return append(params, '}')
}
