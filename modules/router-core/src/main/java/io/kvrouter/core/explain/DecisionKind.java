package io.kvrouter.core.explain;

/**
 * Which call a decision answered: an advisory Select or a Book through the admission actor; a disaggregated call's
 * decode half is a decision of its own ({@code select_decode}, {@code book_decode}) beside its prefill half's.
 */
public enum DecisionKind {
  SELECT("select"),
  BOOK("book"),
  SELECT_DECODE("select_decode"),
  BOOK_DECODE("book_decode");

  private final String wireName;

  DecisionKind(String wireName) {
    this.wireName = wireName;
  }

  public String wireName() {
    return wireName;
  }
}
