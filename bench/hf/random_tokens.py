"""Random token sequences as a training data set: what the bench's Trainer runs train on
(random weights learn nothing either way; step time and memory depend only on the shapes)."""


def random_tokens(torch, n, seq_len, vocab):
    """A map-style Dataset of n sequences of seq_len token ids below vocab, labels = inputs,
    the same on every call (seeded). `torch` is passed in: importing it stays the caller's choice."""

    class RandomTokens(torch.utils.data.Dataset):
        def __init__(self):
            self.ids = torch.randint(0, vocab, (n, seq_len), generator=torch.Generator().manual_seed(0))

        def __len__(self):
            return len(self.ids)

        def __getitem__(self, i):
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    return RandomTokens()
