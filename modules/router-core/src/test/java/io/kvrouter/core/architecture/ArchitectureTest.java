package io.kvrouter.core.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import org.junit.jupiter.api.Test;

/**
 * router-core's packages form no cycle, and router-core depends on no actor, transport or wire library. The
 * {@code admission} and {@code replication} packages count as one: the owner's state drains its replication messages
 * and a replica's messages carry ledger entries, by design (the state and its copy are one feature).
 */
class ArchitectureTest {
  private static final JavaClasses CORE = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages("io.kvrouter.core");

  @Test
  void corePackagesAreFreeOfCycles() {
    slices().assignedFrom(CORE_PACKAGES).should().beFreeOfCycles().check(CORE);
  }

  private static final SliceAssignment CORE_PACKAGES = new SliceAssignment() {
    @Override
    public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
      String name = javaClass.getPackageName();
      if (!name.startsWith("io.kvrouter.core.")) {
        return SliceIdentifier.ignore();
      }
      String top = name.substring("io.kvrouter.core.".length()).split("\\.")[0];
      return SliceIdentifier.of(top.equals("replication") ? "admission" : top);
    }

    @Override
    public String getDescription() {
      return "router-core's top-level packages, admission and replication as one";
    }
  };

  @Test
  void coreImportsNoPekkoGrpcOrProtobuf() {
    noClasses().should().dependOnClassesThat()
        .resideInAnyPackage("org.apache.pekko..", "io.grpc..", "com.google.protobuf..")
        .check(CORE);
  }
}
