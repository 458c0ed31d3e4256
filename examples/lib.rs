//! Nothing here: the programs are the `[[example]]`s beside this file.
