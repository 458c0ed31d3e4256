module wit_component

go 1.25

require (
    go.bytecodealliance.org/pkg v0.4.0
)
