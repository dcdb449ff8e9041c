"""Why is this fact in my output? Proofs that follow updates.

    python examples/explain.py

A Datalog program of flight connections built with ``provenance=True``: diffflow answers
"why can I get from LHR to SYD?" with a proof of minimal height (one shortest route) and the
input facts it rests on, checks that those facts alone derive it again, and answers again
after a route is cancelled.
"""
import diffflow as dd

PROGRAM = """
.decl flight(from: symbol, to: symbol)
.decl route(from: symbol, to: symbol)
route(a, b) :- flight(a, b).
route(a, c) :- flight(a, b), route(b, c).
"""


def main():
    program = dd.Program(PROGRAM, provenance=True)
    program.insert("flight", [("LHR", "JFK"), ("JFK", "SFO"), ("SFO", "NRT"), ("NRT", "SYD"),
                              ("LHR", "DXB"), ("DXB", "SYD")])
    program.commit()
    why = program.explain("route", ("LHR", "SYD"))
    print("why route(LHR, SYD)?")
    print(why.tree)
    print("rests on:", sorted(why.inputs["flight"]))
    why.check()                                   # raises unless those facts derive it again

    program.remove("flight", [("DXB", "SYD")])
    program.commit()
    why = program.explain("route", ("LHR", "SYD"))
    print("after DXB -> SYD is cancelled, it rests on:", sorted(why.inputs["flight"]))


if __name__ == "__main__":
    main()
