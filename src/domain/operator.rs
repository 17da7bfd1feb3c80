//! The names of the claim operators (docs/semantics.md section 3), on their own so that the model's
//! schema can list them without depending on how claims are evaluated.

/// The claim operators of docs/semantics.md section 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    Equals,
    NotEquals,
    Contains,
    NotContains,
    In,
    NotIn,
    Matches,
    Exists,
    NotExists,
    Gt,
    Gte,
    Lt,
    Lte,
}

impl Operator {
    pub const ALL: [(&'static str, Operator); 13] = [
        ("equals", Operator::Equals),
        ("not_equals", Operator::NotEquals),
        ("contains", Operator::Contains),
        ("not_contains", Operator::NotContains),
        ("in", Operator::In),
        ("not_in", Operator::NotIn),
        ("matches", Operator::Matches),
        ("exists", Operator::Exists),
        ("not_exists", Operator::NotExists),
        ("gt", Operator::Gt),
        ("gte", Operator::Gte),
        ("lt", Operator::Lt),
        ("lte", Operator::Lte),
    ];

    pub fn parse(text: &str) -> Option<Operator> {
        Operator::ALL
            .iter()
            .find(|(name, _)| *name == text)
            .map(|&(_, op)| op)
    }

    pub fn name(self) -> &'static str {
        Operator::ALL
            .iter()
            .find(|(_, op)| *op == self)
            .map(|&(name, _)| name)
            .expect("every operator is listed in ALL")
    }
}
