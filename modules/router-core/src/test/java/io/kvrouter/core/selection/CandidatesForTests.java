package io.kvrouter.core.selection;

/** Builds candidate sets with given costs for picker tests (package access to the scratch setters). */
public final class CandidatesForTests {
  private CandidatesForTests() {}

  public static Candidates withCosts(double... costs) {
    Candidates c = new Candidates();
    c.reset(costs.length);
    for (int i = 0; i < costs.length; i++) {
      c.add(i, 0, 0, 0);
      c.setCost(i, costs[i]);
    }
    return c;
  }

  public static void setTemperature(Candidates c, double temperature) {
    c.setTemperature(temperature);
  }
}
