;; accept: the smallest useful Snodo elicitation handler, in WebAssembly text.
;;
;; It accepts every elicitation/create with its configuration as the content:
;; with the configuration {"confirm": true} it answers
;; {"action":"accept","content":{"confirm":true}}; without one, with
;; {"action":"accept","content":{}}. ABI: abi/ABI.md, version 1.
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (import "snodo" "config" (func $config (param i32 i32) (result i32)))

  ;; Page 0: manifest at 16, the answer at 1024 (up to 31 KiB).
  ;; Page 1 onwards: the input buffer, grown on demand.
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":1,\"name\":\"accept\",\"methods\":[\"elicitation/create\"]}")
  (data (i32.const 1024) "{\"action\":\"accept\",\"content\":")

  (global $answerLen (mut i32) (i32.const 0))

  ;; _initialize builds the answer once: prefix, configuration (or {}), "}".
  (func (export "_initialize")
    (local $n i32) (local $end i32)
    (local.set $n (call $config (i32.const 0) (i32.const 0)))
    (if (i32.gt_u (local.get $n) (i32.const 30000))
      (then (local.set $n (i32.const 0))))
    (if (i32.gt_u (local.get $n) (i32.const 0))
      (then
        (drop (call $config (i32.const 1053) (local.get $n)))
        (if (i32.eq (i32.load8_u (i32.const 1053)) (i32.const 110)) ;; 'n' of null
          (then (local.set $n (i32.const 0))))))
    (if (i32.eqz (local.get $n))
      (then
        (i32.store16 (i32.const 1053) (i32.const 0x7d7b)) ;; "{}"
        (local.set $n (i32.const 2))))
    (local.set $end (i32.add (i32.const 1053) (local.get $n)))
    (i32.store8 (local.get $end) (i32.const 125)) ;; "}"
    (global.set $answerLen (i32.sub (i32.add (local.get $end) (i32.const 1)) (i32.const 1024))))

  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 58))
    (i32.const 0))

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

  (func (export "snodo_handle") (param $ptr i32) (param $len i32) (result i32)
    (call $set_output (i32.const 1024) (global.get $answerLen))
    (i32.const 0))
)
