//! Test-only builders: small modules written directly in Rust, for the verifier's tests
//! (and any other module's tests that need a hand-made module).

use crate::ir::{
    BinaryOp, CmpDir, CompId, Computation, ElementType, InstId, Instruction, Loc, Module, Op, Shape, Type,
};

pub fn f32(dims: &[i64]) -> Type {
    Type::array(ElementType::F32, dims)
}
pub fn s32(dims: &[i64]) -> Type {
    Type::array(ElementType::S32, dims)
}
pub fn pred(dims: &[i64]) -> Type {
    Type::array(ElementType::Pred, dims)
}
pub fn ty(elem: ElementType, dims: &[i64]) -> Type {
    Type::array(elem, dims)
}
/// An array type with an explicit layout.
pub fn with_layout(t: Type, layout: &[i64]) -> Type {
    match t {
        Type::Array(s) => Type::Array(Shape { layout: Some(layout.to_vec()), ..s }),
        other => other,
    }
}

/// Builds one computation; instruction names are `<computation>.<op>.<n>`, so they are
/// unique across a module as long as computation names are.
pub struct CompBuilder {
    pub comp: Computation,
    next_line: u32,
}

impl CompBuilder {
    pub fn new(name: &str) -> CompBuilder {
        CompBuilder { comp: Computation::new(name), next_line: 1 }
    }

    fn loc(&mut self) -> Loc {
        let loc = Loc::at(self.next_line, 3);
        self.next_line += 1;
        loc
    }

    pub fn param(&mut self, ty: Type) -> InstId {
        let name = format!("{}.p{}", self.comp.name, self.comp.params.len());
        let loc = self.loc();
        self.comp.push_param(name, ty, loc)
    }

    pub fn op(&mut self, op: Op, operands: &[InstId], ty: Type) -> InstId {
        let name = format!("{}.{}.{}", self.comp.name, op.hlo_name(), self.comp.insts.len());
        let loc = self.loc();
        self.comp.push(Instruction { name, op, operands: operands.to_vec(), ty, loc })
    }

    pub fn finish(mut self, root: InstId) -> Computation {
        self.comp.root = root;
        self.comp
    }
}

/// A scalar `(x, y) -> x op y` body of element type `elem`.
pub fn binary_body(m: &mut Module, name: &str, op: BinaryOp, elem: ElementType) -> CompId {
    let mut b = CompBuilder::new(name);
    let x = b.param(ty(elem, &[]));
    let y = b.param(ty(elem, &[]));
    let r = b.op(Op::Binary(op), &[x, y], ty(elem, &[]));
    m.add_computation(b.finish(r))
}

/// A comparator over `elems` (2 scalar parameters per element type) returning `p0 < p1`.
pub fn less_than(m: &mut Module, name: &str, elems: &[ElementType]) -> CompId {
    let mut b = CompBuilder::new(name);
    let mut ps = Vec::new();
    for &e in elems {
        ps.push(b.param(ty(e, &[])));
        ps.push(b.param(ty(e, &[])));
    }
    let r = b.op(Op::Compare { dir: CmpDir::Lt, kind: None }, &[ps[0], ps[1]], pred(&[]));
    m.add_computation(b.finish(r))
}

/// A module whose entry is `entry` (added last).
pub fn with_entry(mut m: Module, entry: Computation) -> Module {
    m.entry = m.add_computation(entry);
    m
}
