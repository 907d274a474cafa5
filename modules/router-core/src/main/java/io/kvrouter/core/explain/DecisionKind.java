package io.kvrouter.core.explain;

/** Which call a decision answered: an advisory Select or a Book through the admission actor. */
public enum DecisionKind {
  SELECT("select"),
  BOOK("book");

  private final String wireName;

  DecisionKind(String wireName) {
    this.wireName = wireName;
  }

  public String wireName() {
    return wireName;
  }
}
