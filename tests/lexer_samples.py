"""Hand-written ASCII code for each language the tree highlights: strings (with escapes and
interpolation), comments, numbers, keywords and nested states, and a few things each lexer
flags as errors."""

from __future__ import annotations

SAMPLES: dict[str, str] = {}

SAMPLES["python"] = '''#!/usr/bin/env python3
"""Module docstring with a {brace} and a \\"quote\\"."""
from __future__ import annotations
import os.path as osp, sys
from typing import (Any,
    Callable)

@decorator(arg=1)
class Point(Base, metaclass=Meta):
    r"""Raw docstring \\d+"""
    __slots__ = ("x", 'y')

    def __init__(self, x: int = 0x1F, y: float = 1_000.5e-3) -> None:
        self.x, self.y = x, y  # a comment
        z = 0o17 + 0b1010 + 3j + 1e10 + .5 + 5.
        s = f"{x!r:>10} and {y:{z}} {{literal}} {'nested' + f'{x}'}"
        b = rb'\\x00' + b"bytes" + Rb"more"
        t = """multi
line {x}"""
        u = u'\\N{BULLET} \\u1234 \\t \\\\'
        lambda a, *args, **kw: (a, args, kw)
        match command.split():
            case [action, obj] if obj:
                pass
            case _:
                yield from range(10)
        async def inner():
            await something
        return not x is None and y in [1, 2] or False

print(Point.__name__, __import__("os"), len(...), NotImplemented, Ellipsis)
x = y @ z; x //= 2; x **= 3; x >>= 1; x := 5
@ $ ? `
s = "a string left open
after = 'the line ends: back to the root state'
'''

SAMPLES["javascript"] = r"""// line comment
/* block
   comment */
'use strict';
import { readFile } from "node:fs/promises";
export default async function* gen(a = 1, ...rest) {
  const re = /ab+c\/[a-z]{2,}/gi, n = 0x1F + 0o17 + 0b11 + 1_000n + 1.5e-3 + .5;
  let s = `template ${a + `nested ${rest.length}`} done\n`;
  var t = 'single \'quoted\'' + "double \"quoted\"";
  if (a === null || a !== undefined && !(a instanceof Object)) { yield* rest; }
  for (const [k, v] of Object.entries({a: 1, 'b': [2, 3]})) console.log(k, v);
  class Foo extends Bar { #priv = 1; static get x() { return this.#priv; } }
  try { throw new Error("e"); } catch (e) { debugger; } finally { delete obj.key; }
  return typeof a === "string" ? a?.b ?? c : void 0;
}
label: while (true) { break label; }
const arrow = (x) => x ** 2 >>> 1 << 2;
@ #
let open = "a string left open
const after = 1;
"""

SAMPLES["typescript"] = r"""// types and generics
interface Shape<T extends object = {}> { readonly id: number; name?: string; [k: string]: unknown }
type Union = 'a' | "b" | `c${number}`;
enum Color { Red = 1, Green, Blue }
declare module "mod" { export function f(x: number): void; }
abstract class Base<T> implements Shape<T> {
  private constructor(public readonly id: number, protected name: string) { super(); }
  abstract area(): number;
  static async *gen(): AsyncGenerator<number> { yield 1; }
}
function assert(x: unknown): asserts x is string { if (typeof x !== "string") throw 0; }
let v = <any>obj as unknown as Shape<{}>; const n: bigint = 10n; /* comment */
namespace NS { export const x = 0x1f, y = 1e-3; }
@decorator() class C {}
"""

SAMPLES["jsx"] = r"""import React from 'react';
// a component
export const App = ({ items, title = "x" }) => (
  <div className="app" data-x={1 + 2} {...rest}>
    <h1>{title} &amp; more</h1>
    {items.map((it) => <Item key={it.id} {...it} />)}
    <input type="text" disabled />
    <>fragment {`tpl ${title}`}</>
    {/* comment in jsx */}
  </div>
);
function f() { return a < b && c > d; }
"""

SAMPLES["tsx"] = r"""import * as React from "react";
type Props = { items: Array<{ id: number }>; title?: string };
export function List<T,>({ items, title }: Props): JSX.Element {
  const x = items as unknown as T[]; // comment
  return (
    <ul title={title ?? 'none'}>
      {items.map((it) => <li key={it.id}>{it.id * 2}</li>)}
      <Foo.Bar<string> value="v" />
    </ul>
  );
}
"""

SAMPLES["json"] = r"""{
  "name": "streamtool", "version": 1, "ratio": -1.5e+3, "ok": true, "none": null,
  "list": [1, 2.0, "three", {"nested": [false, "\u00e9\n\"q\""]}],
  "bad": tru, 'single': 1, // comment
  /* block */ "trailing": [1, 2,],
}
"""

SAMPLES["toml"] = r"""# comment
title = "TOML \"example\" \u00e9"
literal = 'C:\path'
multi = '''
raw lines
'''
basic_multi = QQQ
line \
  continuedQQQ
[owner]
name = "Tom" # trailing comment
dob = 1979-05-27T07:32:00-08:00
local = 07:32:00
date = 1979-05-27
[database.servers."alpha beta"]
ports = [ 8000, 8001, 8_002, 0xDEAD, 0o17, 0b101, +inf, -nan, 1e-3, 3.14 ]
enabled = true
inline = { x = 1, y = [1, 2], z = { a = "b" } }
[[products]]
"quoted key" = false
bare-key_2 = -0.0
= oops
""".replace("QQQ", '"' * 3)

SAMPLES["yaml"] = r"""%YAML 1.2
---
# comment
key: value
"quoted": 'single ''escaped'''
list:
  - item one
  - {flow: map, with: [seq, 1, 2.5]}
  - ? complex key
    : complex value
anchors: &anchor
  a: 1
ref: *anchor
merge:
  <<: *anchor
literal: |
  line one
  line two
folded: >-
  folded
  text
tagged: !!str 123
custom: !mytag { x: 1 }
empty: ~
bool: yes
...
--- second doc
"""

SAMPLES["markdown"] = r"""# Heading one
Heading two
===========

Some *emphasis*, **strong**, `inline code`, ~~strike~~ and a [link](http://example.com "t").
![image](img.png) <http://auto.link> and a footnote[^1].

> quoted text
> more

1. first
2. second
   - nested *item*
   - [ ] task
   - [x] done

```python
def f(x):
    return x + 1
```

    indented code block

---
| a | b |
|---|---|
| 1 | 2 |

[^1]: the note
"""

SAMPLES["bash"] = r"""#!/bin/bash
# comment
set -euo pipefail
NAME="world ${USER:-nobody} $(date +%s) `uname`"
declare -a arr=(1 2 3)
readonly X='single $not'
function greet() {
  local who=$1; shift
  echo "Hello, $who! ${#arr[@]} ${arr[0]} $((1 + 2 * 3)) $?"
}
if [[ -f "$file" && $x -gt 3 ]]; then greet "$NAME"; elif [ -z "" ]; then :; else exit 1; fi
for i in {1..5}; do printf '%s\n' "$i" >> out.txt 2>&1; done
case "$1" in start|stop) echo ok ;; *) echo no ;; esac
while read -r line; do echo "$line"; done < <(cat file) | grep -v x &
cat <<EOF
heredoc $NAME
EOF
x=$(( 0x1F + 010 )); echo $'ansi\tquote' $"locale"
"""

SAMPLES["rust"] = r"""//! crate docs
/// item docs
use std::{collections::HashMap, fmt};
#[derive(Debug, Clone)]
#![allow(unused)]
pub struct Point<'a, T: Copy + 'a> { x: T, name: &'a str }
impl<'a, T> fmt::Display for Point<'a, T> where T: Copy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /* block /* nested */ comment */
        let s = "string \"esc\" \n \u{1F600}"; let r = r#"raw "quoted""#;
        let b = b'x'; let c = '\n'; let bs = b"bytes";
        let n = 0x1F_u32 + 0o17 + 0b1010 + 1_000i64 as u32 + 1.5e-3f64 as u32;
        match self.x { Some(ref v) if *v > 0 => {}, None | _ => unreachable!() }
        println!("{} {:?}", self.name, vec![1, 2, 3]);
        async move { loop { break 'outer; } }.await;
        unsafe { std::ptr::null::<u8>() };
        Ok(())
    }
}
macro_rules! m { ($x:expr) => { $x + 1 }; }
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut m = HashMap::new(); m.insert(1, 2); Ok(())
}
"""

SAMPLES["go"] = r"""// Package main does things.
package main

import (
	"fmt"
	str "strings"
)

/* block comment */
type Point struct {
	X, Y int `json:"x"`
}

func (p *Point) Add(o Point) (Point, error) {
	var s = "string \"esc\" \n"
	r := `raw string`
	c := 'x'
	n := 0x1F + 0o17 + 0b101 + 1_000 + 1.5e-3 + 2i
	ch := make(chan int, 10)
	go func() { ch <- 1 }()
	select {
	case v := <-ch:
		fmt.Println(v, s, r, c, n)
	default:
	}
	defer fmt.Println(str.ToUpper("done"))
	for i := range []int{1, 2} { if i > 0 { continue } else { break } }
	return Point{p.X + o.X, p.Y + o.Y}, nil
}
"""

SAMPLES["c"] = r"""#include <stdio.h>
#include "local.h"
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#if defined(FOO) && !BAR
#  error "no"
#endif
/* block
   comment */
// line comment
static const unsigned long long N = 0x1FULL + 017 + 1e-3f + 'a' + L'\n' + 10u;
typedef struct point { int x, y; } point_t;
enum color { RED, GREEN = 2 };
int main(int argc, char **argv) {
    char *s = "string \"esc\" \t \x41";
    register int i;
    for (i = 0; i < argc; i++) { if (argv[i][0] == '-') continue; else break; }
    switch (argc) { case 1: goto end; default: break; }
    __asm__ volatile ("nop");
    sizeof(point_t); _Bool b = 1; size_t n = 0; int8_t t;
end:
    return (int)MAX(argc, 2) >> 1;
}
char *open = "a string left open
int after = 1;
"""

SAMPLES["cpp"] = r"""#include <vector>
#pragma once
// comment
namespace ns {
template <typename T, int N = 3>
class Box final : public Base<T> {
public:
    explicit Box(T v) noexcept : v_{v} {}
    virtual ~Box() override = default;
    constexpr auto get() const -> T { return v_; }
    static_assert(sizeof(T) > 0, "size");
private:
    T v_;
};
}  // namespace ns
int main() {
    auto s = R"delim(raw "string")delim" ;
    auto u = u8"utf8" ; auto w = L"wide"; char32_t c = U'x';
    std::vector<int> v{1, 2, 3}; for (auto& x : v) { x <<= 1; }
    auto f = [&](int a) mutable { return a * 0x1F'FF + 1'000 + 0b1010 + 1.5e-3; };
    try { throw std::runtime_error("e"); } catch (const std::exception& e) { nullptr; }
    co_await std::suspend_always{}; delete new int[3];
    return 0;
}
"""

SAMPLES["java"] = r"""package com.example;
import java.util.*;
/** Javadoc {@link Foo} */
@SuppressWarnings("unchecked")
public final class Main<T extends Comparable<T>> implements Runnable {
    private static final long N = 0x1FL + 017 + 1_000 + 1.5e-3d + 'c';
    // comment
    public static void main(String[] args) throws Exception {
        String s = "string \"esc\" \n" + QQQ
            text block
            QQQ;
        var list = new ArrayList<Integer>();
        for (int i = 0; i < 10; i++) { if (i % 2 == 0) continue; list.add(i); }
        switch (args.length) { case 0 -> System.out.println("none"); default -> {} }
        synchronized (Main.class) { assert list != null : "null"; }
        Runnable r = () -> { throw new RuntimeException(); };
        label: while (true) break label;
    }
    @Override public void run() { this.<T>go(); super.toString(); }
    record Point(int x, int y) {}
    sealed interface Shape permits Circle {}
}
""".replace("QQQ", '"' * 3)

SAMPLES["ruby"] = r"""# comment
=begin
block comment
=end
require 'set'
module Greeter
  class Person < Struct.new(:name)
    attr_accessor :age
    CONST = 0x1F + 0b101 + 1_000 + 1.5e-3
    def initialize(name, age = 0, *rest, key: 1, **opts, &blk)
      @name, @@count, $global = name, 0, nil
      s = "interp #{name.upcase} \n" + 'single' + %q(percent) + %w[a b] + %i[x y]
      r = /re#{x}gex/i =~ s
      h = { a: 1, 'b' => 2, :c => [3, 4] }
      yield self if block_given?
      puts <<~HEREDOC
        heredoc #{name}
      HEREDOC
    end
    def to_s = "#{@name} (#{age})"
    def ==(other) ; other.is_a?(Person) && name == other.name ; end
  end
end
[1, 2].each { |x| p x } ; x.map(&:to_s) rescue nil
case x when 1..5 then :low else :high end
__END__
data
"""

SAMPLES["html"] = r"""<!DOCTYPE html>
<html lang="en">
<!-- a comment -->
<head>
  <meta charset="utf-8">
  <title>Title &amp; more &#169;</title>
  <style type="text/css">
    body { color: #fff; margin: 0 auto; }
    .x > p::before { content: "\201C"; }
  </style>
  <script type="text/javascript">
    const x = 1 < 2 && "</p>"; // comment
    function f() { return `t ${x}`; }
  </script>
</head>
<body class='main' data-x=1 hidden>
  <p>Text <b>bold</b> <a href="http://example.com?a=1&b=2">link</a></p>
  <img src="a.png" alt="" />
  <![CDATA[ raw ]]>
</body>
</html>
"""

SAMPLES["css"] = r"""/* comment */
@import url("foo.css") screen;
@charset "utf-8";
:root { --main-color: #06c; --spacing: calc(1rem + 2px); }
@media (max-width: 600px) and (orientation: landscape) {
  .a > .b + .c ~ d[attr^="x"]::after, #id:hover:not(.x) {
    color: var(--main-color, rgb(0 0 0 / 50%)) !important;
    margin: 0 auto -1.5em .5px;
    font: italic bold 12px/30px Georgia, serif;
    background: url(data:image/png;base64,iVBOR=) no-repeat;
    transition: all 0.3s ease-in-out;
    content: "\201C quoted";
  }
}
@keyframes spin { from { transform: rotate(0deg); } to { transform: rotate(360deg); } }
@font-face { font-family: 'X'; src: local(X); unicode-range: U+0025-00FF; }
"""

SAMPLES["sql"] = r"""-- comment
/* block
   comment */
CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name VARCHAR(255) NOT NULL DEFAULT 'x''y',
  score DECIMAL(10, 2) CHECK (score >= 0.5e1)
);
SELECT u.name, COUNT(*) AS n, "quoted id", `backtick`
FROM users u LEFT OUTER JOIN orders o ON o.user_id = u.id
WHERE u.name LIKE 'A%' AND o.total BETWEEN 10 AND 20 OR u.id IN (1, 2, 3)
GROUP BY u.name HAVING n > 1 ORDER BY n DESC LIMIT 10;
insert into t values (1, 'a'), (2, null); update t set x = x + 1 where id = :id;
select $1, @var, 0x1F from dual;
"""

SAMPLES["diff"] = r"""diff --git a/file.py b/file.py
index 83db48f..bf269f4 100644
--- a/file.py
+++ b/file.py
@@ -1,5 +1,6 @@ def f():
 context line
-removed line
+added line
+another
! changed
\ No newline at end of file
Only in dir: file
"""

SAMPLES["text"] = "plain text, nothing to highlight\n\twith a tab and symbols !@#$%\n"
