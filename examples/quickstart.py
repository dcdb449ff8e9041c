"""Popular accounts, kept up to date as follows come and go: the README's quick start.

    python examples/quickstart.py

An account is popular with at least two followers; the output is its name and follower
count. After the first epoch one follow moves from bob to ada, and diffflow prints only
what changed -- bob drops below two followers, ada reaches two.
"""
import diffflow as dd


def main():
    with dd.Dataflow() as flow:
        follows = flow.input("follows", ["src", "dst"])
        names = flow.input("names", [("id", int), ("name", str)])
        followers = follows.aggregate(by=["dst"], n=dd.count())
        popular = (followers.filter(dd.col("n") >= 2)
                   .join(names, left_on="dst", right_on="id")
                   .select("name", "n"))
        out = popular.output()

        names.insert([(1, "ada"), (2, "bob"), (3, "cy")])
        follows.insert([(1, 2), (3, 2), (2, 1)])
        flow.advance()                                    # epoch 0
        print("epoch 0, popular:", sorted(out.snapshot()))

        follows.insert([(3, 1)])
        follows.remove([(3, 2)])
        flow.advance()                                    # epoch 1: only the change is computed
        print("epoch 1, popular:", sorted(out.snapshot()))
        print("changes (row, epoch, diff):")
        for row, epoch, diff in out.changes():
            print(f"  {row}  epoch {epoch}  {diff:+d}")


if __name__ == "__main__":
    main()
