"""Counts labelled cases a scan flagged, for bench/annotated.py and
bench/examples.py: positives and negatives flagged, then each missed
positive and each flagged negative, shown as the caller describes it."""


class Tally:
    def __init__(self):
        self.pos = self.neg = self.pos_hit = self.neg_hit = 0
        self.missed, self.false_pos = [], []

    def add(self, positive, flagged, shown):
        if positive:
            self.pos += 1
            self.pos_hit += flagged
            if not flagged:
                self.missed.append(shown)
        else:
            self.neg += 1
            self.neg_hit += flagged
            if flagged:
                self.false_pos.append(shown)

    def report(self):
        print(f"positives flagged: {self.pos_hit} of {self.pos}")
        print(f"negatives flagged: {self.neg_hit} of {self.neg}")
        for title, rows in (("missed", self.missed), ("flagged negatives", self.false_pos)):
            print(f"\n{title}:")
            for r in rows:
                print(f"  {r}")
