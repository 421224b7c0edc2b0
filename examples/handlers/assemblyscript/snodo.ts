// snodo.ts: the Snodo handler ABI (abi/ABI.md, versions 1 and 2) for
// AssemblyScript modules built with
//
//   asc index.ts -o module.wasm --optimize --exportStart _initialize
//
// A module imports what it needs from "../snodo", re-exports snodo_alloc
//
//   export { snodo_alloc } from "../snodo";
//
// and exports snodo_describe and its entry points: for an interceptor
// (version 2, abi/ABI.md section 8), snodo_intercept_request and/or
// snodo_intercept_result, (ptr: usize, len: u32): i32, declared in the
// manifest as {"abi":2,"intercept":{"requests":true,"methods":[...]}}.
// They answer OK (let it through), ERROR (deny, with an optional error
// object, see errorObject) or REPLACE (the output replaces the params, or
// is {"result":{...}} or {"error":{...}}).
//
// JsonReader reads the JSON the host sends. The host hands interceptors
// valid JSON, but a module reads each value where the document has it —
// the top-level "name" of params, not a "name" found by searching the text
// — and decodes escapes before comparing: "delete\u005ffile" is
// delete_file.

@external("snodo", "set_output")
declare function host_set_output(ptr: usize, len: u32): void;

@external("snodo", "log")
declare function host_log(level: i32, ptr: usize, len: u32): void;

@external("snodo", "config")
declare function host_config(ptr: usize, cap: u32): u32;

export const OK: i32 = 0;
export const ERROR: i32 = 1;
export const STOP: i32 = 2;
export const REPLACE: i32 = 3;

export const DEBUG: i32 = 0;
export const INFO: i32 = 1;
export const WARN: i32 = 2;
export const ERR: i32 = 3;

export const INVALID_PARAMS: i32 = -32602;
export const INTERNAL_ERROR: i32 = -32603;

// output sets the call's output.
export function output(s: string): void {
  const b = String.UTF8.encode(s);
  host_set_output(changetype<usize>(b), <u32>b.byteLength);
}

export function log(level: i32, s: string): void {
  const b = String.UTF8.encode(s);
  host_log(level, changetype<usize>(b), <u32>b.byteLength);
}

// config returns the module's configuration ("null" when none).
export function config(): string {
  const n = host_config(0, 0);
  const buf = new ArrayBuffer(<i32>n);
  host_config(changetype<usize>(buf), n);
  return String.UTF8.decode(buf);
}

// input returns the input of the call in progress as a string.
export function input(ptr: usize, len: u32): string {
  return String.UTF8.decodeUnsafe(ptr, len);
}

// quote returns s as a JSON string.
export function quote(s: string): string {
  // Runs of plain characters copied whole, parts joined once: linear time.
  const out = new Array<string>();
  out.push('"');
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc: string | null = null;
    if (c == 34) esc = '\\"';
    else if (c == 92) esc = "\\\\";
    else if (c < 0x20 || (c >= 0xd800 && c < 0xe000)) {
      // Control characters, and surrogates escaped one by one so a lone
      // one stays JSON rather than becoming invalid UTF-8.
      esc = "\\u" + (<u32>c).toString(16).padStart(4, "0");
    }
    if (esc !== null) {
      out.push(s.substring(start, i));
      out.push(esc);
      start = i + 1;
    }
  }
  out.push(s.substring(start));
  out.push('"');
  return out.join("");
}

// errorObject returns the JSON-RPC error object {"code":code,"message":message}.
export function errorObject(code: i32, message: string): string {
  return '{"code":' + code.toString() + ',"message":' + quote(message) + "}";
}

// deny sets an error object as the output and returns ERROR: the return of
// an interceptor that denies what it sees.
export function deny(code: i32, message: string): i32 {
  output(errorObject(code, message));
  return ERROR;
}

// The input buffer of the call in progress: the host fills it after
// snodo_alloc and the next snodo_alloc frees it.
let inputBuf: usize = 0;

export function snodo_alloc(size: u32): usize {
  if (inputBuf != 0) heap.free(inputBuf);
  const n: usize = size > 0 ? <usize>size : 1;
  inputBuf = heap.alloc(n);
  return inputBuf;
}

const MAX_DEPTH = 512;

// JsonReader reads one JSON document. Each method reads the value at pos
// (after white space) and moves pos past it; on malformed JSON it sets
// failed and the results are null or false. It does not build a tree: a
// module asks for the members it needs with member().
export class JsonReader {
  pos: i32 = 0;
  failed: bool = false;
  constructor(public s: string) {}

  ws(): void {
    const s = this.s;
    while (this.pos < s.length) {
      const c = s.charCodeAt(this.pos);
      if (c == 32 || c == 9 || c == 10 || c == 13) this.pos++;
      else break;
    }
  }

  // peek returns the next character code after white space, or -1.
  peek(): i32 {
    this.ws();
    return this.pos < this.s.length ? this.s.charCodeAt(this.pos) : -1;
  }

  fail(): void {
    this.failed = true;
    this.pos = this.s.length;
  }

  // string reads a JSON string and returns it decoded, or null (and no
  // move) when the value there is not a string.
  string(): string | null {
    if (this.peek() != 34) return null;
    const s = this.s;
    let i = this.pos + 1;
    // Parts joined once at the end: appending to a string at each escape
    // would take time quadratic in the escapes of a hostile string.
    const out = new Array<string>();
    let start = i;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c == 34) {
        out.push(s.substring(start, i));
        this.pos = i + 1;
        return out.join("");
      }
      if (c < 0x20) break;
      if (c != 92) { i++; continue; }
      out.push(s.substring(start, i));
      if (i + 1 >= s.length) break;
      const e = s.charCodeAt(i + 1);
      i += 2;
      if (e == 34 || e == 92 || e == 47) out.push(String.fromCharCode(e));
      else if (e == 98) out.push("\b");
      else if (e == 102) out.push("\f");
      else if (e == 110) out.push("\n");
      else if (e == 114) out.push("\r");
      else if (e == 116) out.push("\t");
      else if (e == 117) {
        // \uXXXX is one UTF-16 code unit, which is what an AssemblyScript
        // string holds: a surrogate pair comes out whole.
        if (i + 4 > s.length) break;
        let v: i32 = 0;
        let ok = true;
        for (let k = 0; k < 4; k++) {
          const h = s.charCodeAt(i + k);
          let d: i32 = -1;
          if (h >= 48 && h <= 57) d = h - 48;
          else if (h >= 97 && h <= 102) d = h - 87;
          else if (h >= 65 && h <= 70) d = h - 55;
          if (d < 0) { ok = false; break; }
          v = (v << 4) | d;
        }
        if (!ok) break;
        out.push(String.fromCharCode(v));
        i += 4;
      } else break;
      start = i;
    }
    this.fail();
    return null;
  }

  // skipString moves past the string at pos without decoding it.
  private skipString(): void {
    const s = this.s;
    let i = this.pos + 1;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c == 34) { this.pos = i + 1; return; }
      if (c < 0x20) break;
      i += c == 92 ? 2 : 1;
    }
    this.fail();
  }

  // skip moves past the value at pos.
  skip(): void {
    this.skipDepth(0);
  }

  private skipDepth(depth: i32): void {
    const c = this.peek();
    if (c < 0 || depth > MAX_DEPTH) { this.fail(); return; }
    if (c == 34) { this.skipString(); return; }
    if (c == 123 || c == 91) {
      const close = c == 123 ? 125 : 93;
      this.pos++;
      if (this.peek() == close) { this.pos++; return; }
      while (!this.failed) {
        if (close == 125) {
          if (this.string() === null) { this.fail(); return; }
          if (this.peek() != 58) { this.fail(); return; }
          this.pos++;
        }
        this.skipDepth(depth + 1);
        const n = this.peek();
        this.pos++;
        if (n == close) return;
        if (n != 44) { this.fail(); return; }
      }
      return;
    }
    // A number, true, false or null.
    const s = this.s;
    const start = this.pos;
    while (this.pos < s.length) {
      const d = s.charCodeAt(this.pos);
      if ((d >= 48 && d <= 57) || (d >= 97 && d <= 122) || d == 45 || d == 43 || d == 46 || d == 69) this.pos++;
      else break;
    }
    if (this.pos == start) this.fail();
  }

  // member moves to the value of the member key at the top level of the
  // object at pos and returns true, or returns false (and leaves pos
  // somewhere in or after the object) when there is none or the value at
  // pos is not an object.
  member(key: string): bool {
    if (this.peek() != 123) return false;
    this.pos++;
    if (this.peek() == 125) return false;
    while (!this.failed) {
      const k = this.string();
      if (k === null || this.peek() != 58) { this.fail(); return false; }
      this.pos++;
      if (k == key) { this.ws(); return true; }
      this.skip();
      if (this.peek() != 44) return false;
      this.pos++;
    }
    return false;
  }

  // strings reads an array of strings, or returns null when the value at
  // pos is not one.
  strings(): string[] | null {
    if (this.peek() != 91) return null;
    this.pos++;
    const out = new Array<string>();
    if (this.peek() == 93) { this.pos++; return out; }
    while (!this.failed) {
      const v = this.string();
      if (v === null) return null;
      out.push(v);
      const n = this.peek();
      this.pos++;
      if (n == 93) return out;
      if (n != 44) return null;
    }
    return null;
  }
}
