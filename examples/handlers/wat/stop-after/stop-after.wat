;; stop-after: a Snodo subscription consumer in plain WebAssembly text.
;;
;; It logs every event it receives (method and params, at info level) and
;; ends the subscription after N events, where N is the module's
;; configuration, a JSON number (for example 3). Without a configuration, or
;; with 0, it never ends the subscription. ABI: abi/ABI.md, version 1.
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (import "snodo" "log" (func $log (param i32 i32 i32)))
  (import "snodo" "config" (func $config (param i32 i32) (result i32)))

  ;; Page 0: manifest at 16, configuration at 1024 (up to 1 KiB).
  ;; Page 1 onwards: the input buffer, grown on demand.
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":1,\"name\":\"stop-after\",\"events\":true}")

  (global $limit (mut i32) (i32.const 0))
  (global $seen (mut i32) (i32.const 0))

  ;; _initialize reads the configuration and parses its leading digits.
  (func (export "_initialize")
    (local $n i32) (local $i i32) (local $c i32)
    (local.set $n (call $config (i32.const 1024) (i32.const 1024)))
    (if (i32.gt_u (local.get $n) (i32.const 1024))
      (then (local.set $n (i32.const 1024))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $c (i32.load8_u (i32.add (i32.const 1024) (local.get $i))))
        (br_if $done (i32.or (i32.lt_u (local.get $c) (i32.const 48))
                             (i32.gt_u (local.get $c) (i32.const 57))))
        (global.set $limit
          (i32.add (i32.mul (global.get $limit) (i32.const 10))
                   (i32.sub (local.get $c) (i32.const 48))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))

  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 43))
    (i32.const 0))

  ;; snodo_alloc returns page 1, growing memory so that n bytes fit there.
  (func (export "snodo_alloc") (param $n i32) (result i32)
    (local $pages i32)
    (local.set $pages
      (i32.add (i32.const 1)
        (i32.shr_u (i32.add (local.get $n) (i32.const 65535)) (i32.const 16))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))

  ;; snodo_event logs the event and answers STOP (2) at the limit, else OK (0).
  (func (export "snodo_event") (param $ptr i32) (param $len i32) (result i32)
    (call $log (i32.const 1) (local.get $ptr) (local.get $len))
    (global.set $seen (i32.add (global.get $seen) (i32.const 1)))
    (if (result i32)
      (i32.and (i32.ne (global.get $limit) (i32.const 0))
               (i32.ge_u (global.get $seen) (global.get $limit)))
      (then (i32.const 2))
      (else (i32.const 0))))
)
