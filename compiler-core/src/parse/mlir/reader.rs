//! Reading ops, regions, functions and modules into the syntax tree.
//!
//! Generic ops (`"stablehlo.sort"(%a) <{...}> ({...}) {...} : (...) -> ...`) and the
//! pretty forms of StableHLO, `func`, `check` and `chlo` ops all produce an [`OpAst`].
//! Pretty forms put their attributes in op-specific places (`dims = [0]`,
//! `contracting_dims = [1] x [0]`, `[1:3]` slices, `applies stablehlo.add`); they are
//! stored under the names written, and lowering looks attributes up under both the
//! pretty and the generic name.

use super::ast::{Attr, AttrEntry, FuncAst, ModuleAst, OpAst, Operands, Region, ResultDef, Types, ValRef};
use super::attrs::{conv_dims_compact, parse_attr, parse_dense, parse_dict, parse_loc};
use super::lexer::Cursor;
use super::types::{parse_colon_types, parse_type};
use crate::parse::ParseError;
use smallvec::SmallVec;

/// Reads a whole text: `#alias = ...` definitions, `module { ... }` and/or functions.
/// The body of the first function named `defer`, if any, is skipped, not read (its
/// `FuncAst::deferred` says where it starts): the entry is lowered as its ops are read.
pub fn read_module(c: &mut Cursor, mut defer: Option<&str>) -> Result<ModuleAst, ParseError> {
    let mut m = ModuleAst::default();
    let mut seen_module = false;
    loop {
        if c.at_end() {
            break;
        }
        if c.starts_with("{-#") {
            // Trailing dialect resources (`dense_resource` payloads): not used.
            match c.src[c.pos..].find("#-}") {
                Some(k) => c.pos += k + 3,
                None => return Err(c.err_at(c.pos, "unterminated `{-#` section")),
            }
            continue;
        }
        if c.peek() == Some(b'#') {
            alias_def(c, &mut m)?;
            continue;
        }
        if c.peek_kw("module") || c.starts_with("builtin.module") {
            if seen_module {
                return Err(c.err_at(c.pos, "only one `module` per text is supported"));
            }
            seen_module = true;
            if !c.eat_kw("module") {
                c.expect_kw("builtin.module")?;
            }
            if let Some(name) = c.symbol()? {
                m.name = Some(name);
            }
            if c.eat_kw("attributes") {
                parse_dict(c)?;
            }
            c.expect("{")?;
            loop {
                if c.eat("}") {
                    break;
                }
                if c.at_end() {
                    return Err(c.expected("`}` closing the module"));
                }
                if let Some(f) = read_func(c, &mut defer)? {
                    m.funcs.push(f);
                }
            }
            if c.peek_kw("loc") {
                parse_loc(c)?;
            }
            continue;
        }
        if let Some(f) = read_func(c, &mut defer)? {
            m.funcs.push(f);
        }
    }
    Ok(m)
}

/// `#loc3 = loc(...)` or another attribute alias (not needed, skipped).
fn alias_def(c: &mut Cursor, m: &mut ModuleAst) -> Result<(), ParseError> {
    c.pos += 1;
    let name = c.expect_ident("an alias name")?.to_string();
    c.expect("=")?;
    if c.peek_kw("loc") {
        let l = parse_loc(c)?;
        m.loc_aliases.push((name, l));
    } else if c.peek() == Some(b'!') {
        parse_type(c)?;
    } else {
        parse_attr(c, true)?;
    }
    Ok(())
}

/// `func.func [public|private] @name(%a: T {attrs} loc(..), ...) [-> results]
/// [attributes {...}] { body } [loc(..)]`. Declarations without a body are skipped.
fn read_func(c: &mut Cursor, defer: &mut Option<&str>) -> Result<Option<FuncAst>, ParseError> {
    c.skip_ws();
    let pos = c.pos;
    if !c.eat_kw("func.func") {
        return Err(c.expected("`func.func`"));
    }
    let public = !c.eat_kw("private");
    if public && !c.eat_kw("public") {
        c.eat_kw("nested");
    }
    let name = c.symbol()?.ok_or_else(|| c.expected("a function name `@...`"))?;
    c.expect("(")?;
    let mut region = Region { pos, ..Region::default() };
    if !c.eat(")") {
        loop {
            c.skip_ws();
            let apos = c.pos;
            let arg = c.value_name().ok_or_else(|| c.expected("an argument `%name`"))?.to_string();
            c.expect(":")?;
            let ty = parse_type(c)?;
            if c.peek() == Some(b'{') {
                parse_dict(c)?;
            }
            if c.peek_kw("loc") {
                parse_loc(c)?;
            }
            region.args.push((arg, ty, apos));
            if c.eat(",") {
                continue;
            }
            c.expect(")")?;
            break;
        }
    }
    let mut result_types = Vec::new();
    if c.eat("->") {
        if c.eat("(") {
            if !c.eat(")") {
                loop {
                    result_types.push(parse_type(c)?);
                    if c.peek() == Some(b'{') {
                        parse_dict(c)?;
                    }
                    if c.peek_kw("loc") {
                        parse_loc(c)?;
                    }
                    if c.eat(",") {
                        continue;
                    }
                    c.expect(")")?;
                    break;
                }
            }
        } else {
            result_types.push(parse_type(c)?);
        }
    }
    if c.eat_kw("attributes") {
        parse_dict(c)?;
    }
    if c.peek() != Some(b'{') {
        if c.peek_kw("loc") {
            parse_loc(c)?;
        }
        return Ok(None);
    }
    let mut deferred = None;
    if *defer == Some(name.as_str()) {
        *defer = None;
        let open = c.pos;
        c.skip_balanced()?;
        deferred = Some((open + 1, c.pos));
    } else {
        c.expect("{")?;
        region.ops = read_ops(c)?;
    }
    if c.peek_kw("loc") {
        parse_loc(c)?;
    }
    Ok(Some(FuncAst { name, public, body: region, deferred, result_types, pos }))
}

/// Ops up to and including the closing `}` of a block.
fn read_ops(c: &mut Cursor) -> Result<Vec<OpAst>, ParseError> {
    let mut ops = Vec::new();
    while let Some(op) = next_op(c)? {
        ops.push(op);
    }
    Ok(ops)
}

/// The next op of a block, or None after the block's closing `}`.
pub fn next_op(c: &mut Cursor) -> Result<Option<OpAst>, ParseError> {
    if c.eat("}") {
        return Ok(None);
    }
    if c.at_end() {
        return Err(c.expected("`}`"));
    }
    if c.peek() == Some(b'^') {
        return Err(c.err_at(c.pos, "regions with several blocks are not supported"));
    }
    read_op(c).map(Some)
}

/// A region `{ [^bb0(%a: T, ...):] ops }`.
fn read_region(c: &mut Cursor) -> Result<Region, ParseError> {
    c.enter()?;
    c.skip_ws();
    let pos = c.pos;
    c.expect("{")?;
    let mut region = Region { pos, ..Region::default() };
    if c.block_label().is_some() {
        if c.eat("(") {
            region.args = block_args(c)?;
        }
        c.expect(":")?;
    }
    region.ops = read_ops(c)?;
    c.leave();
    Ok(region)
}

/// `%a: T, %b: T)` (after the opening parenthesis, consumes the closing one).
fn block_args(c: &mut Cursor) -> Result<Vec<(String, crate::ir::Type, usize)>, ParseError> {
    let mut args = Vec::new();
    if c.eat(")") {
        return Ok(args);
    }
    loop {
        c.skip_ws();
        let apos = c.pos;
        let name = c.value_name().ok_or_else(|| c.expected("a block argument `%name`"))?.to_string();
        c.expect(":")?;
        let ty = parse_type(c)?;
        if c.peek_kw("loc") {
            parse_loc(c)?;
        }
        args.push((name, ty, apos));
        if c.eat(",") {
            continue;
        }
        c.expect(")")?;
        return Ok(args);
    }
}

/// Reads a value's `%name`; its length, which the syntax tree keeps instead of the name.
fn value_name_len(c: &mut Cursor, what: &str) -> Result<u32, ParseError> {
    let name = c.value_name().ok_or_else(|| c.expected(what))?;
    u32::try_from(name.len()).map_err(|_| c.err_at(c.pos, "a value name longer than 4 GiB"))
}

fn value_ref(c: &mut Cursor) -> Result<ValRef, ParseError> {
    c.skip_ws();
    let pos = c.pos;
    let len = value_name_len(c, "a value `%name`")?;
    let mut index = None;
    if c.peek_raw(0) == Some(b'#') {
        c.pos += 1;
        let ip = c.pos;
        let i = c.int()?;
        index = Some(u32::try_from(i).map_err(|_| c.err_at(ip, "bad result index"))?);
    }
    Ok(ValRef { len, index, pos })
}

/// `%a, %b` up to `close` (consumed); empty allowed.
fn operand_list(c: &mut Cursor, close: &str) -> Result<Operands, ParseError> {
    let mut out = Operands::new();
    if c.eat(close) {
        return Ok(out);
    }
    loop {
        out.push(value_ref(c)?);
        if c.eat(",") {
            continue;
        }
        c.expect(close)?;
        return Ok(out);
    }
}

/// True when the text ahead is the result list of the next statement (`%x =`,
/// `%x:2 =`, `%a, %b =`) rather than an operand.
fn looks_like_result_def(c: &mut Cursor) -> bool {
    let save = c.pos;
    let mut r = false;
    loop {
        if c.value_name().is_none() {
            break;
        }
        if c.peek_raw(0) == Some(b':') && c.peek_raw(1).is_some_and(|b| b.is_ascii_digit()) {
            c.pos += 1;
            let _ = c.int();
        }
        if c.eat(",") {
            continue;
        }
        r = c.peek() == Some(b'=') && c.peek_raw(1) != Some(b'=');
        break;
    }
    c.pos = save;
    r
}

fn read_op(c: &mut Cursor) -> Result<OpAst, ParseError> {
    c.enter()?;
    let r = read_op_inner(c);
    c.leave();
    r
}

fn read_op_inner(c: &mut Cursor) -> Result<OpAst, ParseError> {
    let mut results = SmallVec::new();
    if c.peek() == Some(b'%') {
        loop {
            c.skip_ws();
            let pos = c.pos;
            let len = value_name_len(c, "a result name")?;
            let mut count = 1;
            if c.peek_raw(0) == Some(b':') {
                c.pos += 1;
                let cp = c.pos;
                count = u32::try_from(c.int()?).map_err(|_| c.err_at(cp, "bad result count"))?;
            }
            results.push(ResultDef { len, count, pos });
            if c.eat(",") {
                continue;
            }
            break;
        }
        c.expect("=")?;
    }
    c.skip_ws();
    let pos = c.pos;
    let mut op = if c.peek() == Some(b'"') {
        let name = c.string()?;
        let mut op = OpAst::new(name, pos);
        generic_op(c, &mut op)?;
        op
    } else {
        let name = c.expect_ident("an op name")?.to_string();
        let mut op = OpAst::new(name, pos);
        pretty_op(c, &mut op)?;
        op
    };
    op.results = results;
    if c.peek_kw("loc") {
        op.loc = Some(parse_loc(c)?);
    }
    Ok(op)
}

/// `(%a, %b) [<{props}>] [({region}, ...)] [{attrs}] : (T, ...) -> (T, ...)`.
fn generic_op(c: &mut Cursor, op: &mut OpAst) -> Result<(), ParseError> {
    c.expect("(")?;
    op.operands = operand_list(c, ")")?;
    if c.peek() == Some(b'[') {
        return Err(c.err_at(c.pos, "ops with successor blocks are not supported"));
    }
    if c.eat("<") {
        if c.peek() != Some(b'{') {
            return Err(c.expected("`{` after `<`"));
        }
        op.attrs.extend(parse_dict(c)?);
        c.expect(">")?;
    }
    if c.starts_with("(") {
        c.pos += 1;
        loop {
            op.regions.push(read_region(c)?);
            if c.eat(",") {
                continue;
            }
            c.expect(")")?;
            break;
        }
    }
    if c.peek() == Some(b'{') {
        op.attrs.extend(parse_dict(c)?);
    }
    c.expect(":")?;
    set_types(c, op)
}

fn set_types(c: &mut Cursor, op: &mut OpAst) -> Result<(), ParseError> {
    let (function_type, outs) = parse_colon_types(c)?;
    op.spells_operand_types = function_type;
    op.result_types = outs;
    Ok(())
}

fn push_attr(op: &mut OpAst, name: &str, value: Attr) {
    op.attrs.push(AttrEntry { name: name.to_string(), value, text: String::new() });
}

/// Pretty (custom) forms, dispatched on the op name.
fn pretty_op(c: &mut Cursor, op: &mut OpAst) -> Result<(), ParseError> {
    match op.name.as_str() {
        "stablehlo.constant" => {
            if c.peek() == Some(b'{') {
                op.attrs.extend(parse_dict(c)?);
            }
            let d = parse_dense_or_attr(c)?;
            if let Attr::Dense(d) = &d {
                op.result_types = smallvec::smallvec![d.ty.clone()];
            }
            push_attr(op, "value", d);
            return Ok(());
        }
        "stablehlo.compare" => {
            let dir = c.expect_ident("a comparison direction")?;
            push_attr(op, "comparison_direction", Attr::Enum(dir.to_string()));
            c.expect(",")?;
            op.operands.push(value_ref(c)?);
            c.expect(",")?;
            op.operands.push(value_ref(c)?);
            if c.eat(",") {
                let kind = c.expect_ident("a comparison type")?;
                push_attr(op, "compare_type", Attr::Enum(kind.to_string()));
            }
        }
        "stablehlo.slice" => {
            op.operands.push(value_ref(c)?);
            if c.peek() == Some(b'[') {
                slice_ranges(c, op)?;
            }
            keyed_items(c, op, true)?;
        }
        "stablehlo.get_tuple_element" => {
            op.operands.push(value_ref(c)?);
            c.expect("[")?;
            let i = c.int()?;
            c.expect("]")?;
            push_attr(op, "index", Attr::Num(super::lexer::Number::Int(i as i128)));
        }
        "stablehlo.convolution" | "stablehlo.dynamic_conv" => {
            c.expect("(")?;
            op.operands = operand_list(c, ")")?;
            keyed_items(c, op, false)?;
        }
        "stablehlo.reduce" => return pretty_reduce(c, op),
        "stablehlo.while" => return pretty_while(c, op),
        "stablehlo.custom_call" | "func.call" | "call" => {
            op.callee = Some(c.symbol()?.ok_or_else(|| c.expected("a symbol `@...`"))?);
            c.expect("(")?;
            op.operands = operand_list(c, ")")?;
        }
        "chlo.scan" => {
            // `chlo.scan(%xs) inits(%c) dimension=0 [attributes {..}] { region } : T`.
            c.expect("(")?;
            op.operands = operand_list(c, ")")?;
            c.expect_kw("inits")?;
            c.expect("(")?;
            let inits = operand_list(c, ")")?;
            push_attr(op, "num_inits", Attr::Num(super::lexer::Number::Int(inits.len() as i128)));
            op.operands.extend(inits);
            keyed_items(c, op, false)?;
            if c.eat_kw("attributes") {
                op.attrs.extend(parse_dict(c)?);
            }
            op.regions.push(read_region(c)?);
        }
        "stablehlo.composite" => {
            let name = c.string()?;
            push_attr(op, "name", Attr::Str(name));
            keyed_items(c, op, false)?;
        }
        _ => {
            if c.peek_raw(0) == Some(b'(') {
                // `chlo.top_k(%x, k = 2)`.
                c.pos += 1;
                keyed_items(c, op, false)?;
                c.expect(")")?;
            } else {
                keyed_items(c, op, false)?;
            }
        }
    }
    op_tail(c, op)
}

/// `dense<...> : T` or any other attribute (with its type).
fn parse_dense_or_attr(c: &mut Cursor) -> Result<Attr, ParseError> {
    if c.peek_kw("dense") {
        Ok(Attr::Dense(Box::new(parse_dense(c)?)))
    } else {
        parse_attr(c, true)
    }
}

/// `[attr-dict] [: types] [attr-dict]`.
fn op_tail(c: &mut Cursor, op: &mut OpAst) -> Result<(), ParseError> {
    if c.peek() == Some(b'{') {
        op.attrs.extend(parse_dict(c)?);
    }
    if c.eat(":") {
        set_types(c, op)?;
    }
    if c.peek() == Some(b'{') {
        op.attrs.extend(parse_dict(c)?);
    }
    Ok(())
}

/// Comma-separated operands, `key = value` pairs and positional `dense<...>` values.
/// `after_comma` is true when the caller has read items already (needs a comma first).
fn keyed_items(c: &mut Cursor, op: &mut OpAst, after_comma: bool) -> Result<(), ParseError> {
    if after_comma && !c.eat(",") {
        return Ok(());
    }
    let mut first = !after_comma;
    loop {
        c.skip_ws();
        if c.peek() == Some(b'%') {
            if first && looks_like_result_def(c) {
                return Ok(());
            }
            op.operands.push(value_ref(c)?);
        } else if c.peek_kw("dense") {
            let d = parse_dense(c)?;
            push_attr(op, "value", Attr::Dense(Box::new(d)));
        } else if let Some(key) = c.peek_ident() {
            let save = c.pos;
            c.pos += key.len();
            if !c.eat("=") {
                c.pos = save;
                if first {
                    return Ok(());
                }
                return Err(c.expected("`key = value`"));
            }
            let value = pretty_value(c, key)?;
            push_attr(op, key, value);
        } else {
            if first {
                return Ok(());
            }
            return Err(c.expected("an operand or `key = value`"));
        }
        first = false;
        if !c.eat(",") {
            return Ok(());
        }
    }
}

/// A value after `key =` in a pretty form.
fn pretty_value(c: &mut Cursor, key: &str) -> Result<Attr, ParseError> {
    c.enter()?;
    let r = pretty_value_inner(c, key);
    c.leave();
    r
}

fn pretty_value_inner(c: &mut Cursor, key: &str) -> Result<Attr, ParseError> {
    if key == "dim_numbers" {
        return Ok(Attr::Conv(Box::new(conv_dims_compact(c)?)));
    }
    match c.peek() {
        Some(b'{') => {
            // `window = {stride = [1, 1], pad = [[0, 0], [0, 0]]}`.
            c.pos += 1;
            let mut entries = Vec::new();
            if !c.eat("}") {
                loop {
                    let k = c.expect_ident("a field name")?.to_string();
                    c.expect("=")?;
                    let v = pretty_value(c, &k)?;
                    entries.push(AttrEntry { name: k, value: v, text: String::new() });
                    if c.eat(",") {
                        continue;
                    }
                    c.expect("}")?;
                    break;
                }
            }
            Ok(Attr::Dict(entries))
        }
        Some(b'[') => {
            let a = parse_attr(c, false)?;
            if c.peek_kw("x") {
                c.pos += 1;
                let b = parse_attr(c, false)?;
                return Ok(Attr::Pair(Box::new(a), Box::new(b)));
            }
            Ok(a)
        }
        Some(b'"') => Ok(Attr::Str(c.string()?)),
        _ => parse_attr(c, false),
    }
}

/// `[1:3, 0:4:2]`.
fn slice_ranges(c: &mut Cursor, op: &mut OpAst) -> Result<(), ParseError> {
    use super::lexer::Number;
    c.expect("[")?;
    let (mut start, mut limit, mut stride) = (Vec::new(), Vec::new(), Vec::new());
    let num = |v: i64| Attr::Num(Number::Int(v as i128));
    if !c.eat("]") {
        loop {
            start.push(num(c.int()?));
            c.expect(":")?;
            limit.push(num(c.int()?));
            stride.push(num(if c.eat(":") { c.int()? } else { 1 }));
            if c.eat(",") {
                continue;
            }
            c.expect("]")?;
            break;
        }
    }
    push_attr(op, "start_indices", Attr::Array(start));
    push_attr(op, "limit_indices", Attr::Array(limit));
    push_attr(op, "strides", Attr::Array(stride));
    Ok(())
}

/// `stablehlo.reduce(%x init: %c), ... applies stablehlo.add across dimensions = [1] : T`
/// or `... across dimensions = [1] : T reducer(%a: T, %b: T) (%c: T, %d: T) { ... }`.
fn pretty_reduce(c: &mut Cursor, op: &mut OpAst) -> Result<(), ParseError> {
    let mut inputs = Operands::new();
    let mut inits = Vec::new();
    loop {
        c.expect("(")?;
        inputs.push(value_ref(c)?);
        c.expect_kw("init")?;
        c.expect(":")?;
        inits.push(value_ref(c)?);
        c.expect(")")?;
        if !c.eat(",") {
            break;
        }
    }
    op.operands = inputs;
    op.operands.extend(inits);
    if c.eat_kw("applies") {
        c.skip_ws();
        let p = c.pos;
        let body = c.expect_ident("the reduction op")?.to_string();
        op.applies = Some((body, p));
    }
    c.expect_kw("across")?;
    c.expect_kw("dimensions")?;
    c.expect("=")?;
    let dims = parse_attr(c, false)?;
    push_attr(op, "dimensions", dims);
    op_tail(c, op)?;
    if op.applies.is_none() {
        c.expect_kw("reducer")?;
        let mut firsts = Vec::new();
        let mut seconds = Vec::new();
        while c.eat("(") {
            let args = block_args(c)?;
            if args.len() != 2 {
                return Err(c.err_at(c.pos, "each reducer group takes two arguments"));
            }
            let mut it = args.into_iter();
            firsts.extend(it.next());
            seconds.extend(it.next());
        }
        let mut region = read_region(c)?;
        firsts.extend(seconds);
        region.args = firsts;
        op.regions.push(region);
    }
    Ok(())
}

/// `stablehlo.while(%it = %init, ...) : T, ... [attributes {...}] cond { } do { }`.
fn pretty_while(c: &mut Cursor, op: &mut OpAst) -> Result<(), ParseError> {
    c.expect("(")?;
    let mut names = Vec::new();
    if !c.eat(")") {
        loop {
            c.skip_ws();
            let p = c.pos;
            let n = c.value_name().ok_or_else(|| c.expected("a loop variable `%name`"))?.to_string();
            c.expect("=")?;
            op.operands.push(value_ref(c)?);
            names.push((n, p));
            if c.eat(",") {
                continue;
            }
            c.expect(")")?;
            break;
        }
    }
    let mut types = Types::new();
    if c.eat(":") {
        let (function_type, outs) = parse_colon_types(c)?;
        types = outs;
        op.spells_operand_types = function_type;
    }
    if c.eat_kw("attributes") {
        op.attrs.extend(parse_dict(c)?);
    }
    if types.len() != names.len() {
        return Err(
            c.err_at(op.pos, format!("stablehlo.while has {} loop values but {} types", names.len(), types.len()))
        );
    }
    let args: Vec<_> = names.iter().zip(&types).map(|((n, p), t)| (n.clone(), t.clone(), *p)).collect();
    c.expect_kw("cond")?;
    let mut cond = read_region(c)?;
    c.expect_kw("do")?;
    let mut body = read_region(c)?;
    cond.args = args.clone();
    body.args = args;
    op.regions = vec![cond, body];
    op.result_types = types;
    Ok(())
}
