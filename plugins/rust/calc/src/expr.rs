//! The expression language: tokenizer and recursive-descent evaluator.
//!
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/' | '%') unary)*
//! unary   := ('-' | '+') unary | power
//! power   := primary ('^' unary)?          right-associative: 2^3^2 = 2^9
//! primary := number | constant | function '(' expr (',' expr)* ')' | '(' expr ')'
//! ```
//!
//! Unary minus binds looser than `^`, as in mathematics: `-2^2` is `-4`.
//! The evaluator works while it parses, so there is no tree to build, and it
//! is plain Rust: `cargo test -p calc` runs it natively.

use std::fmt;

/// Longest expression accepted, in characters.
pub const MAX_LEN: usize = 1000;
/// Deepest nesting of parentheses, unary operators and function calls.
pub const MAX_DEPTH: usize = 64;

/// Why an expression could not be evaluated, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct CalcError {
    /// 1-based column (in characters) where the problem starts.
    pub column: usize,
    /// What is wrong, for the model.
    pub message: String,
}

impl fmt::Display for CalcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for CalcError {}

/// Evaluates an expression to a finite number.
///
/// # Errors
///
/// [`CalcError`] for a syntax error, an unknown name, a wrong argument
/// count, division or remainder by zero, a square root or logarithm out of
/// its domain, a non-finite result, or an expression longer than
/// [`MAX_LEN`] or nested deeper than [`MAX_DEPTH`].
///
/// # Examples
///
/// ```
/// assert_eq!(calc::expr::evaluate("2 * (3 + 4)").unwrap(), 14.0);
/// assert!(calc::expr::evaluate("1 / 0").is_err());
/// ```
pub fn evaluate(source: &str) -> Result<f64, CalcError> {
    let length = source.chars().count();
    if length > MAX_LEN {
        return Err(CalcError {
            column: MAX_LEN + 1,
            message: format!("the expression is {length} characters long; the limit is {MAX_LEN}"),
        });
    }
    let tokens = tokenize(source)?;
    let mut parser = Parser {
        tokens,
        next: 0,
        depth: 0,
        end: length + 1,
    };
    let value = parser.expr()?;
    if let Some(token) = parser.peek() {
        return Err(CalcError {
            column: token.column,
            message: format!("unexpected {} after a complete expression", token.kind),
        });
    }
    Ok(value)
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Number(f64),
    Name(String),
    Op(char),
    Open,
    Close,
    Comma,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Number(n) => write!(f, "number {n}"),
            Kind::Name(n) => write!(f, "name `{n}`"),
            Kind::Op(c) => write!(f, "operator `{c}`"),
            Kind::Open => f.write_str("`(`"),
            Kind::Close => f.write_str("`)`"),
            Kind::Comma => f.write_str("`,`"),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    column: usize,
}

fn tokenize(source: &str) -> Result<Vec<Token>, CalcError> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        let kind = match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '0'..='9' | '.' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                if i < chars.len() && matches!(chars[i], 'e' | 'E') {
                    let mut j = i + 1;
                    if j < chars.len() && matches!(chars[j], '+' | '-') {
                        j += 1;
                    }
                    if j < chars.len() && chars[j].is_ascii_digit() {
                        i = j;
                        while i < chars.len() && chars[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
                let text: String = chars[start..i].iter().collect();
                let value = text.parse::<f64>().map_err(|_| CalcError {
                    column,
                    message: format!("`{text}` is not a number"),
                })?;
                tokens.push(Token {
                    kind: Kind::Number(value),
                    column,
                });
                continue;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                tokens.push(Token {
                    kind: Kind::Name(chars[start..i].iter().collect()),
                    column,
                });
                continue;
            }
            '+' | '-' | '*' | '/' | '%' | '^' => Kind::Op(c),
            '(' => Kind::Open,
            ')' => Kind::Close,
            ',' => Kind::Comma,
            other => {
                return Err(CalcError {
                    column,
                    message: format!(
                        "unexpected character `{other}`; use numbers, + - * / % ^, \
                         parentheses, functions and the constants pi and e"
                    ),
                });
            }
        };
        tokens.push(Token { kind, column });
        i += 1;
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    next: usize,
    depth: usize,
    /// Column just past the end, for "unexpected end" errors.
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next)
    }

    fn bump(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.next).cloned();
        self.next += 1;
        token
    }

    fn peek_op(&self, ops: &[char]) -> Option<(char, usize)> {
        match self.peek() {
            Some(Token {
                kind: Kind::Op(c),
                column,
            }) if ops.contains(c) => Some((*c, *column)),
            _ => None,
        }
    }

    fn enter(&mut self, column: usize) -> Result<(), CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(CalcError {
                column,
                message: format!("the expression is nested deeper than {MAX_DEPTH} levels"),
            });
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<f64, CalcError> {
        let mut value = self.term()?;
        while let Some((op, column)) = self.peek_op(&['+', '-']) {
            self.next += 1;
            let rhs = self.term()?;
            value = finite(if op == '+' { value + rhs } else { value - rhs }, column)?;
        }
        Ok(value)
    }

    fn term(&mut self) -> Result<f64, CalcError> {
        let mut value = self.unary()?;
        while let Some((op, column)) = self.peek_op(&['*', '/', '%']) {
            self.next += 1;
            let rhs = self.unary()?;
            if op != '*' && rhs == 0.0 {
                let what = if op == '/' { "division" } else { "remainder" };
                return Err(CalcError {
                    column,
                    message: format!("{what} by zero"),
                });
            }
            value = finite(
                match op {
                    '*' => value * rhs,
                    '/' => value / rhs,
                    _ => value % rhs,
                },
                column,
            )?;
        }
        Ok(value)
    }

    fn unary(&mut self) -> Result<f64, CalcError> {
        if let Some((op, column)) = self.peek_op(&['-', '+']) {
            self.next += 1;
            self.enter(column)?;
            let value = self.unary()?;
            self.depth -= 1;
            return Ok(if op == '-' { -value } else { value });
        }
        self.power()
    }

    fn power(&mut self) -> Result<f64, CalcError> {
        let base = self.primary()?;
        if let Some((_, column)) = self.peek_op(&['^']) {
            self.next += 1;
            self.enter(column)?;
            let exponent = self.unary()?;
            self.depth -= 1;
            return finite(base.powf(exponent), column);
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<f64, CalcError> {
        let Some(token) = self.bump() else {
            return Err(CalcError {
                column: self.end,
                message: "the expression ends where a number was expected".to_owned(),
            });
        };
        match token.kind {
            Kind::Number(n) => Ok(n),
            Kind::Open => {
                self.enter(token.column)?;
                let value = self.expr()?;
                self.expect_close(token.column)?;
                self.depth -= 1;
                Ok(value)
            }
            Kind::Name(name) => {
                if matches!(
                    self.peek(),
                    Some(Token {
                        kind: Kind::Open,
                        ..
                    })
                ) {
                    self.next += 1;
                    self.enter(token.column)?;
                    let args = self.arguments(token.column)?;
                    self.depth -= 1;
                    call(&name, &args, token.column)
                } else {
                    constant(&name).ok_or_else(|| CalcError {
                        column: token.column,
                        message: format!("unknown constant `{name}`; the constants are pi and e"),
                    })
                }
            }
            other => Err(CalcError {
                column: token.column,
                message: format!("expected a number, found {other}"),
            }),
        }
    }

    /// Parses `expr (',' expr)* ')'` after a function's `(`.
    fn arguments(&mut self, open: usize) -> Result<Vec<f64>, CalcError> {
        let mut args = vec![self.expr()?];
        while matches!(
            self.peek(),
            Some(Token {
                kind: Kind::Comma,
                ..
            })
        ) {
            self.next += 1;
            args.push(self.expr()?);
        }
        self.expect_close(open)?;
        Ok(args)
    }

    fn expect_close(&mut self, open: usize) -> Result<(), CalcError> {
        match self.bump() {
            Some(Token {
                kind: Kind::Close, ..
            }) => Ok(()),
            Some(token) => Err(CalcError {
                column: token.column,
                message: format!(
                    "expected `)` to close the `(` at column {open}, found {}",
                    token.kind
                ),
            }),
            None => Err(CalcError {
                column: self.end,
                message: format!("the `(` at column {open} is never closed"),
            }),
        }
    }
}

fn finite(value: f64, column: usize) -> Result<f64, CalcError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(CalcError {
            column,
            message: "the result is not a finite number (overflow or undefined)".to_owned(),
        })
    }
}

fn constant(name: &str) -> Option<f64> {
    match name {
        "pi" => Some(std::f64::consts::PI),
        "e" => Some(std::f64::consts::E),
        _ => None,
    }
}

fn call(name: &str, args: &[f64], column: usize) -> Result<f64, CalcError> {
    let error = |message: String| CalcError { column, message };
    let one = |f: fn(f64) -> f64| -> Result<f64, CalcError> {
        match args {
            [x] => Ok(f(*x)),
            _ => Err(error(format!(
                "`{name}` takes 1 argument, got {}",
                args.len()
            ))),
        }
    };
    let value = match name {
        "sqrt" => {
            if args.first().is_some_and(|x| *x < 0.0) {
                return Err(error("`sqrt` of a negative number".to_owned()));
            }
            one(f64::sqrt)?
        }
        "ln" | "log10" => {
            if args.first().is_some_and(|x| *x <= 0.0) {
                return Err(error(format!("`{name}` needs a positive argument")));
            }
            one(if name == "ln" { f64::ln } else { f64::log10 })?
        }
        "abs" => one(f64::abs)?,
        "exp" => one(f64::exp)?,
        "round" => one(f64::round)?,
        "floor" => one(f64::floor)?,
        "ceil" => one(f64::ceil)?,
        "sin" => one(f64::sin)?,
        "cos" => one(f64::cos)?,
        "tan" => one(f64::tan)?,
        "min" => args.iter().copied().fold(f64::INFINITY, f64::min),
        "max" => args.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        _ => {
            return Err(error(format!(
                "unknown function `{name}`; the functions are sqrt, abs, exp, ln, log10, \
                 sin, cos, tan, round, floor, ceil, min and max"
            )));
        }
    };
    finite(value, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(s: &str) -> f64 {
        evaluate(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> CalcError {
        match evaluate(s) {
            Ok(v) => panic!("{s} evaluated to {v}, expected an error"),
            Err(e) => e,
        }
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(eval("1 + 2 * 3"), 7.0);
        assert_eq!(eval("(1 + 2) * 3"), 9.0);
        assert_eq!(eval("10 - 4 - 3"), 3.0);
        assert_eq!(eval("100 / 10 / 5"), 2.0);
        assert_eq!(eval("2 ^ 3 ^ 2"), 512.0);
        assert_eq!(eval("-2 ^ 2"), -4.0);
        assert_eq!(eval("2 ^ -1"), 0.5);
        assert_eq!(eval("7 % 4 * 2"), 6.0);
        assert_eq!(eval("--3"), 3.0);
        assert_eq!(eval("+3 - -3"), 6.0);
    }

    #[test]
    fn numbers_with_decimals_and_exponents() {
        assert_eq!(eval("1.5e3"), 1500.0);
        assert_eq!(eval(".25 * 4"), 1.0);
        assert_eq!(eval("2E-2"), 0.02);
        assert_eq!(eval("3.0e+1"), 30.0);
    }

    #[test]
    fn functions_and_constants() {
        assert_eq!(eval("sqrt(16) + abs(-2)"), 6.0);
        assert_eq!(eval("min(3, 1, 2) + max(3, 1, 2)"), 4.0);
        assert_eq!(eval("round(2.5) + floor(1.9) + ceil(1.1)"), 6.0);
        assert_eq!(eval("log10(1000)"), 3.0);
        assert_eq!(eval("ln(e)"), 1.0);
        assert!((eval("sin(pi / 2)") - 1.0).abs() < 1e-12);
        assert!((eval("cos(0) + tan(0)") - 1.0).abs() < 1e-12);
        assert_eq!(eval("exp(0)"), 1.0);
    }

    #[test]
    fn division_and_remainder_by_zero_name_the_operator() {
        let e = err("1 / (2 - 2)");
        assert_eq!(e.column, 3);
        assert!(e.message.contains("division by zero"), "{e}");
        assert!(err("5 % 0").message.contains("remainder by zero"));
    }

    #[test]
    fn syntax_errors_point_at_the_column() {
        assert_eq!(err("1 +").column, 4);
        assert_eq!(err("2 * * 3").column, 5);
        assert_eq!(err("(1 + 2").message, "the `(` at column 1 is never closed");
        assert_eq!(err("1 2").column, 3);
        assert_eq!(err("1 + $").column, 5);
        assert_eq!(err("").column, 1);
        assert_eq!(err("1..2").column, 1);
    }

    #[test]
    fn unknown_names_and_bad_arity_are_reported() {
        assert!(err("foo(1)").message.contains("unknown function `foo`"));
        assert!(err("x + 1").message.contains("unknown constant `x`"));
        assert!(
            err("sqrt(1, 2)")
                .message
                .contains("takes 1 argument, got 2")
        );
        assert!(err("sqrt(-1)").message.contains("negative"));
        assert!(err("ln(0)").message.contains("positive"));
    }

    #[test]
    fn non_finite_results_are_rejected() {
        assert!(err("10 ^ 400").message.contains("not a finite number"));
        assert!(err("1e308 * 10").message.contains("not a finite number"));
    }

    #[test]
    fn code_is_not_evaluated() {
        assert!(evaluate("process.exit(1)").is_err());
        assert!(evaluate("alert('x')").is_err());
        assert!(evaluate("1; 2").is_err());
    }

    #[test]
    fn length_limit() {
        let long = "1+".repeat(MAX_LEN / 2) + "1";
        let e = err(&long);
        assert!(e.message.contains("limit is 1000"), "{e}");
        let ok = "1+".repeat(MAX_LEN / 2 - 1) + "1";
        assert_eq!(eval(&ok), (MAX_LEN / 2) as f64);
    }

    #[test]
    fn nesting_limit_stops_deep_parentheses_and_unary_chains() {
        let deep = "(".repeat(MAX_DEPTH + 1) + "1" + &")".repeat(MAX_DEPTH + 1);
        assert!(err(&deep).message.contains("nested deeper"));
        let shallow = "(".repeat(MAX_DEPTH) + "1" + &")".repeat(MAX_DEPTH);
        assert_eq!(eval(&shallow), 1.0);
        assert!(
            err(&"-".repeat(MAX_DEPTH + 1))
                .message
                .contains("nested deeper")
        );
        let powers = vec!["2"; MAX_DEPTH + 2].join("^");
        assert!(err(&powers).message.contains("nested deeper"));
    }
}
