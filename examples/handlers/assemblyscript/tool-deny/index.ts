// tool-deny: a Snodo interceptor (ABI version 2, abi/ABI.md section 8) in
// AssemblyScript that denies each tools/call of a tool on its deny list:
//
//   {"deny": ["delete_file", "move_file"]}
//
// Names are compared exactly (MCP tool names are case-sensitive) after the
// JSON escapes of both are decoded, so "delete\u005ffile" is delete_file.
// The name is read from the top level of the request's params only: a
// "name" inside "arguments" is not the tool's. A call without a string
// "name" is denied too. A configuration that is not {"deny": [strings]}
// denies every call, with an error saying what is wrong.

import { OK, INVALID_PARAMS, INTERNAL_ERROR, output, config, input, deny, JsonReader } from "../snodo";

export { snodo_alloc } from "../snodo";

let denied: string[] = [];
let configError: string | null = null;

// Top-level code runs from _initialize (built with --exportStart).
{
  const r = new JsonReader(config());
  const list = r.member("deny") ? r.strings() : null;
  if (list === null) {
    configError = 'configuration must be {"deny": ["tool name", ...]}';
  } else {
    for (let i = 0; i < list.length; i++) {
      if (list[i].length == 0) configError = 'configuration: "deny" must be an array of non-empty strings';
    }
    denied = list;
  }
}

export function snodo_describe(): i32 {
  output('{"abi":2,"name":"tool-deny","intercept":{"requests":true,"methods":["tools/call"]}}');
  return OK;
}

export function snodo_intercept_request(ptr: usize, len: u32): i32 {
  const err = configError;
  if (err !== null) return deny(INTERNAL_ERROR, "tool-deny: " + err);
  const r = new JsonReader(input(ptr, len));
  const name = r.member("params") && r.member("name") ? r.string() : null;
  if (name === null) return deny(INVALID_PARAMS, "tool-deny: tools/call without a tool name");
  for (let i = 0; i < denied.length; i++) {
    if (denied[i] == name) return deny(INVALID_PARAMS, "tool-deny: this tool is on this client's deny list: " + name);
  }
  return OK;
}
