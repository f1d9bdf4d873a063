//! Runtime values: what the interpreter and the targets pass around.

use super::literal::Literal;
use super::types::Type;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Array(Literal),
    Tuple(Vec<Value>),
    Token,
}

impl Value {
    pub fn as_array(&self) -> Option<&Literal> {
        match self {
            Value::Array(l) => Some(l),
            _ => None,
        }
    }
    pub fn into_array(self) -> Option<Literal> {
        match self {
            Value::Array(l) => Some(l),
            _ => None,
        }
    }
    /// The arrays of this value, tuples flattened depth-first (the CLI's `out0.npy`,
    /// `out1.npy`, ... order).
    pub fn flatten(self) -> Vec<Literal> {
        let mut out = Vec::new();
        fn walk(v: Value, out: &mut Vec<Literal>) {
            match v {
                Value::Array(l) => out.push(l),
                Value::Tuple(vs) => vs.into_iter().for_each(|v| walk(v, out)),
                Value::Token => {}
            }
        }
        walk(self, &mut out);
        out
    }
    /// The type of this value (layouts unset).
    pub fn ty(&self) -> Type {
        match self {
            Value::Array(l) => Type::Array(l.shape.clone()),
            Value::Tuple(vs) => Type::Tuple(vs.iter().map(Value::ty).collect()),
            Value::Token => Type::Token,
        }
    }
}

impl From<Literal> for Value {
    fn from(l: Literal) -> Value {
        Value::Array(l)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.ty())
    }
}
