// progress-cancel: a Snodo progress consumer in AssemblyScript. It sees
// every notifications/progress of a request made with progress and cancels
// the request when a condition from its configuration holds:
//
//   {"maxProgress": 50, "cancelOnMessage": "retrying"}
//
// - maxProgress: cancel once "progress" exceeds this number;
// - maxFraction: cancel once progress/total exceeds this fraction (0..1);
// - cancelOnMessage: cancel when the notification's message contains this
//   text.
//
// A cancellation answers STOP with an error object saying which condition
// held; the host cancels the request on the server with it. ABI:
// abi/ABI.md, version 1.
//
// The JSON it reads is flat and produced by Snodo, so it finds members by
// name rather than parsing documents in full.

@external("snodo", "set_output")
declare function set_output(ptr: usize, len: u32): void;

@external("snodo", "log")
declare function host_log(level: i32, ptr: usize, len: u32): void;

@external("snodo", "config")
declare function host_config(ptr: usize, cap: u32): u32;

const OK: i32 = 0;
const STOP: i32 = 2;

function output(s: string): void {
  const b = String.UTF8.encode(s);
  set_output(changetype<usize>(b), <u32>b.byteLength);
}

function log(level: i32, s: string): void {
  const b = String.UTF8.encode(s);
  host_log(level, changetype<usize>(b), <u32>b.byteLength);
}

// number returns the number after "key": in json, or NaN.
function number(json: string, key: string): f64 {
  const at = json.indexOf('"' + key + '":');
  if (at < 0) return NaN;
  let i = at + key.length + 3;
  while (i < json.length && json.charCodeAt(i) == 32) i++;
  let j = i;
  while (j < json.length) {
    const c = json.charCodeAt(j);
    if ((c >= 48 && c <= 57) || c == 45 || c == 43 || c == 46 || c == 101 || c == 69) j++;
    else break;
  }
  return j > i ? parseFloat(json.substring(i, j)) : NaN;
}

// text returns the string after "key": in json (escapes kept as written),
// or null.
function text(json: string, key: string): string | null {
  const at = json.indexOf('"' + key + '":');
  if (at < 0) return null;
  let i = at + key.length + 3;
  while (i < json.length && json.charCodeAt(i) == 32) i++;
  if (i >= json.length || json.charCodeAt(i) != 34) return null;
  i++;
  let j = i;
  while (j < json.length && json.charCodeAt(j) != 34) {
    if (json.charCodeAt(j) == 92) j++;
    j++;
  }
  return json.substring(i, j);
}

let maxProgress: f64 = NaN;
let maxFraction: f64 = NaN;
let cancelOnMessage: string | null = null;

// Top-level code runs from _initialize (built with --exportStart).
{
  const n = host_config(0, 0);
  const buf = new ArrayBuffer(<i32>n);
  host_config(changetype<usize>(buf), n);
  const cfg = String.UTF8.decode(buf);
  maxProgress = number(cfg, "maxProgress");
  maxFraction = number(cfg, "maxFraction");
  cancelOnMessage = text(cfg, "cancelOnMessage");
}

export function snodo_describe(): i32 {
  output('{"abi":1,"name":"progress-cancel","progress":true}');
  return OK;
}

let input: usize = 0;

export function snodo_alloc(size: u32): usize {
  if (input != 0) heap.free(input);
  const n: usize = size > 0 ? <usize>size : 1;
  input = heap.alloc(n);
  return input;
}

function stop(why: string): i32 {
  log(2, "cancelling: " + why);
  output('{"code":-32603,"message":"progress-cancel: ' + why + '"}');
  return STOP;
}

export function snodo_progress(ptr: usize, len: u32): i32 {
  const json = String.UTF8.decodeUnsafe(ptr, len);
  const progress = number(json, "progress");
  const total = number(json, "total");
  if (!isNaN(maxProgress) && progress > maxProgress) {
    return stop("progress " + progress.toString() + " is over " + maxProgress.toString());
  }
  if (!isNaN(maxFraction) && !isNaN(total) && total > 0 && progress / total > maxFraction) {
    return stop("progress " + progress.toString() + "/" + total.toString() + " is over the fraction " + maxFraction.toString());
  }
  const pattern = cancelOnMessage;
  if (pattern !== null && pattern.length > 0) {
    const message = text(json, "message");
    if (message !== null && message.includes(pattern)) {
      return stop("message contains the configured text");
    }
  }
  return OK;
}
