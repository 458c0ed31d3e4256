//! A tool's questions for its user (contract 0.2 `user.ask`), end to end,
//! with the `hostile_ask` fixture: a program's answerer on the call
//! context (accept, decline, cancel, time limit, refused schemas, budget,
//! no one to ask, the deadline not eaten by the wait); `toolhost serve`
//! asking the MCP client's user through elicitation (the official Python
//! SDK's client); `toolhost run` asking on a terminal, and the tool told
//! no one can be asked without one.

mod cli;
mod library;
mod mcp;
