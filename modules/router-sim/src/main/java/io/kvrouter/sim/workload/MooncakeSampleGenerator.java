package io.kvrouter.sim.workload;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Generates a synthetic trace in the Mooncake format (the repository ships one, {@code traces/mooncake-sample.jsonl},
 * made by {@code bin/sim generate-trace}; no public trace is copied). Arrivals are Poisson; a request is one of:
 * <ul>
 *   <li>a turn of a chat session (30 %): the session's previous prompt ids plus 1–4 new blocks, the next turn 5–60 s
 *       later, up to 8 turns;</li>
 *   <li>a question on a shared document (40 %): one of 40 documents of 4–24 blocks, picked with a Zipf(1.1)
 *       popularity, followed by 1–4 blocks of its own;</li>
 *   <li>a one-off prompt (30 %) of 1–16 blocks nobody else shares.</li>
 * </ul>
 * The last block of every prompt is partial (1–512 tokens); output lengths are 32–600 tokens.
 */
public final class MooncakeSampleGenerator {
  private final TraceDraws draws;
  private final long[][] documents;
  private final double[] zipf;

  public MooncakeSampleGenerator(long seed) {
    this.draws = new TraceDraws(seed);
    this.documents = draws.documents(40, 4, 24);
    this.zipf = TraceDraws.zipf(documents.length, 1.1);
  }

  /** {@code requests} entries arriving at {@code perSecond} on average, sorted by timestamp. */
  public List<MooncakeTrace.Entry> generate(int requests, double perSecond) {
    List<MooncakeTrace.Entry> entries = new ArrayList<>();
    double t = 0;
    while (entries.size() < requests) {
      t += -Math.log(1 - draws.random.nextDouble()) / perSecond;
      double kind = draws.random.nextDouble();
      if (kind < 0.3) {
        draws.session(entries, t, requests);
      } else if (kind < 0.7) {
        long[] document = documents[draws.pick(zipf)];
        entries.add(draws.entry(t, TraceDraws.concat(document, draws.freshIds(1 + draws.random.nextInt(4)))));
      } else {
        entries.add(draws.entry(t, draws.freshIds(1 + draws.random.nextInt(16))));
      }
    }
    entries.sort(Comparator.comparingLong(MooncakeTrace.Entry::timestampMillis));
    return entries;
  }
}
