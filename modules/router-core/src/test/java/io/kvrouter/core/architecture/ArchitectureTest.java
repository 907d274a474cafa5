package io.kvrouter.core.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** router-core's packages form no cycle, and router-core depends on no actor, transport or wire library. */
class ArchitectureTest {
  private static final JavaClasses CORE = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages("io.kvrouter.core");

  @Test
  void corePackagesAreFreeOfCycles() {
    slices().matching("io.kvrouter.core.(*)..").should().beFreeOfCycles().check(CORE);
  }

  @Test
  void coreImportsNoPekkoGrpcOrProtobuf() {
    noClasses().should().dependOnClassesThat()
        .resideInAnyPackage("org.apache.pekko..", "io.grpc..", "com.google.protobuf..")
        .check(CORE);
  }
}
