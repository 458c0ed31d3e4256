//! toolhost plugin `calc`: evaluates arithmetic expressions safely.
//!
//! This is the job `new Function("return " + expr)` used to do, without
//! running the model's text as code: a tokenizer and a precedence-climbing
//! parser over a fixed grammar (see [`expr`]), with limits on length and
//! nesting, and errors that say where the expression went wrong.

pub mod expr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::ToolError;

/// Input of `calc_eval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalInput {
    /// An arithmetic expression, e.g. `2 * (3 + 4) ^ 2 / sqrt(16)`.
    /// Operators: `+ - * / % ^` (power, right-associative) and unary minus.
    /// Functions: sqrt, abs, exp, ln, log10, sin, cos, tan (radians), round,
    /// floor, ceil, min(a, b, ...), max(a, b, ...). Constants: pi, e.
    pub expression: String,
}

/// Output of `calc_eval`.
#[derive(Debug, Serialize)]
pub struct EvalOutput {
    /// The value of the expression.
    pub value: f64,
}

/// Evaluates `input.expression`.
///
/// # Errors
///
/// `invalid_input` naming the column of the problem: a syntax error, an
/// unknown name, division by zero, a result that is not a finite number, or
/// an expression past the length or nesting limit.
pub fn eval(input: EvalInput) -> Result<EvalOutput, ToolError> {
    expr::evaluate(&input.expression)
        .map(|value| EvalOutput { value })
        .map_err(ToolError::invalid_input)
}

toolhost_guest::export_tools! {
    calc_eval: "Evaluate an arithmetic expression exactly as written and return its value. \
                Use it for any arithmetic instead of computing in your head." => eval,
}
