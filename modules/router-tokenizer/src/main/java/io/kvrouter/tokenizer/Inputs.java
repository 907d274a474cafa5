package io.kvrouter.tokenizer;

import com.fasterxml.jackson.databind.ObjectMapper;

/** What every class of this module shares for reading input: one JSON mapper, and how errors quote input. */
final class Inputs {
  /** Plain JSON: objects read as insertion-ordered maps, numbers as Integer, Long, BigInteger or Double. */
  static final ObjectMapper JSON = new ObjectMapper();

  /** The most characters of any input an error message quotes. */
  static final int ECHO_LIMIT = 128;

  private Inputs() {}

  /** Input quoted in an error message: at most {@value #ECHO_LIMIT} characters, then "...". */
  static String echo(Object input) {
    String s = String.valueOf(input);
    return s.length() <= ECHO_LIMIT ? s : s.substring(0, ECHO_LIMIT) + "...";
  }
}
