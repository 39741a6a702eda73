/// A pipeline file: where accounts come from, which ones it acts on, which stages run, and the guards.
public struct PipelineDefinition: Sendable, Equatable {
    public var version: Int
    public var name: String
    public var description: String?
    public var source: SourceConfig
    public var inputs: InputsConfig
    public var selection: SelectionConfig
    public var stages: StagesConfig
    public var guards: GuardsConfig
    public var report: ReportConfig
    public var output: OutputConfig
    public var services: ServicesConfig
    public var apply: ApplyConfig = ApplyConfig()
}

/// How `apply` and `run` carry out a plan.
public struct ApplyConfig: Sendable, Equatable {
    /// `idpipe run` applies without `--yes` (a scheduled job that was reviewed once, as a file).
    public var unattended = false
    /// How many accounts go through their revocations and data deletion at once.
    public var accountsInFlight = 64
    public init() {}
}

public enum SourceFormat: String, Sendable, Equatable, CaseIterable {
    case authExportJSON = "auth-export-json"
    case authExportCSV = "auth-export-csv"
    case mappedCSV = "mapped-csv"
    /// The live API: `accounts:batchGet` pages (services.google says where).
    case identityToolkit = "identity-toolkit"
}

public enum TimestampFormat: String, Sendable, Equatable, CaseIterable {
    case rfc3339
    case epochMilliseconds = "epoch-ms"
    case epochSeconds = "epoch-s"

    /// What a value of this format is, after "is not": "an RFC 3339 time".
    public var described: String {
        switch self {
        case .rfc3339: "an RFC 3339 time"
        case .epochMilliseconds: "a time in epoch milliseconds"
        case .epochSeconds: "a time in epoch seconds"
        }
    }
}

public struct SourceConfig: Sendable, Equatable {
    public var format: SourceFormat
    /// Absolute, or relative to the pipeline file's folder.
    public var path: String
    public var mapping: ColumnMapping?
    public var timestampFormat: TimestampFormat
    /// The zone a mapped table's times without one were written in (`source.timestamp_zone`); nil: such a time is
    /// quarantined, and a date alone is midnight UTC.
    public var timestampZone: TimestampZone? = nil
    /// A mapped table's country for the phone numbers it holds without a country code; nil: such a number is quarantined.
    public var phoneDefault: PhoneDefault? = nil
    /// The texts a mapped table writes in a cell for NULL (`source.null_values`), as the pipeline gives them; nil: the
    /// default, `nullCells`.
    public var nullValues: [String]? = nil

    /// MySQL's `SELECT … INTO OUTFILE` and PostgreSQL's text `COPY` write NULL as `\N`, which no field holds as a value.
    public static let defaultNullValues = ["\\N"]

    /// The cell texts a mapped table's reader takes for an empty cell: no value.
    public var nullCells: [String] { nullValues ?? Self.defaultNullValues }

    /// How phone numbers without a country code are completed, in words (`validate`, and the reviewer's plan.md).
    public var phoneAssumption: String? {
        phoneDefault.map { phones in
            "a phone number without a country code is taken for +\(phones.countryCode)"
                + (phones.countryCode == "1" ? (phones.trunkPrefix.isEmpty ? ", of 10 digits" : ", of 10 digits, or 11 starting with 1")
                    : phones.trunkPrefix.isEmpty ? ", whole" : " after its trunk prefix \(phones.trunkPrefix), which it must start with")
        }
    }

    /// How times without a zone are read, in words.
    public var zoneAssumption: String? {
        timestampZone.map { "a time without a zone is read in \($0.description)" }
    }

    /// Which cells are read as no value, in words, when the pipeline names them.
    public var nullAssumption: String? {
        guard let nullValues, !nullValues.isEmpty else { return nil }
        return "a cell that is " + nullValues.joined(separator: " or ") + " is read as empty (NULL)"
    }

    /// What the plan takes for granted about the source's values, for its reviewer; nil when nothing.
    public var assumptions: String? {
        let all = [zoneAssumption, phoneAssumption, nullAssumption].compactMap { $0 }
        return all.isEmpty ? nil : all.joined(separator: "; ")
    }
}

/// The country of a table's phone numbers written without a country code (`source.phone_country_code` and
/// `source.phone_trunk_prefix`): normalization writes them in E.164 with its calling code, and lists each as a repair.
public struct PhoneDefault: Sendable, Equatable {
    /// The calling code, digits only: "44", "1".
    public var countryCode: String
    /// What a caller inside the country dials before a national number: "0" (most countries), which such a number must
    /// start with, and which is dropped; "1" in North America, dropped when an 11-digit number starts with it; empty
    /// where there is none (Italy, Spain). (`PhoneNormalizer.nationalNumber` has the rules.)
    public var trunkPrefix: String

    public init(countryCode: String, trunkPrefix: String) {
        self.countryCode = countryCode
        self.trunkPrefix = trunkPrefix
    }
}

/// For a CSV with a header row: which column holds which account field.
public struct ColumnMapping: Sendable, Equatable {
    public static let fields = ["localId", "email", "emailVerified", "displayName", "photoUrl", "phoneNumber", "createdAt", "lastSignedInAt", "disabled"]
    /// Account field → column header.
    public var columns: [String: String]
    /// Provider id → column header holding the provider's rawId.
    public var providers: [String: String]

    public init(columns: [String: String], providers: [String: String]) {
        self.columns = columns
        self.providers = providers
    }
}

public struct InputsConfig: Sendable, Equatable {
    public var legacyNames: String?
    public var deletionRequests: String?
    public var storedTokens: String?
    public var protectedAccounts: String?

    /// Each input by its key under `inputs:`.
    public static let roles: [(role: String, path: WritableKeyPath<InputsConfig, String?> & Sendable)] = [
        ("legacy_names", \.legacyNames), ("deletion_requests", \.deletionRequests), ("stored_tokens", \.storedTokens),
        ("protected_accounts", \.protectedAccounts),
    ]

    public init(legacyNames: String? = nil, deletionRequests: String? = nil, storedTokens: String? = nil, protectedAccounts: String? = nil) {
        self.legacyNames = legacyNames
        self.deletionRequests = deletionRequests
        self.storedTokens = storedTokens
        self.protectedAccounts = protectedAccounts
    }
}

public struct SelectionConfig: Sendable, Equatable {
    public var deletionRequested = false
    /// A deletion request is acted on once it is this many days old (a grace period in which its owner may change their
    /// mind); nil: at once.
    public var deletionGraceDays: Int?
    public var disabled = false
    public var inactiveForDays: Int?
    /// How the retention rules (`disabled`, `inactive_for_days`) combine: either selects, or only both at once. A
    /// deletion request selects on its own either way.
    public var retentionMatch = RetentionMatch.any
    /// Only accounts linked to at least one of these providers (empty: no filter).
    public var providers: [String] = []
    public var protectedIds: [String] = []
    public var protectedEmailDomains: [String] = []

    public var selectsAnything: Bool { deletionRequested || disabled || inactiveForDays != nil }

    /// The latest time a deletion request may have been made to be acted on at `asOf`: `asOf`, less the grace period.
    public func requestsHonouredUntil(asOf: Int64) -> Int64 {
        asOf - Int64(deletionGraceDays ?? 0) * 86_400_000
    }
}

/// `select.retention_match`: whether an account must meet one retention rule or all of them to be selected.
public enum RetentionMatch: String, Sendable, Equatable, CaseIterable {
    case any, all
}

public enum NameSource: Sendable, Equatable, CustomStringConvertible {
    /// The legacy names table captured at first sign-in.
    case legacy
    /// The display name of another linked provider.
    case provider(String)
    /// The local part of a real (never a relay) email address: `jane.doe@…` → `Jane Doe`.
    case emailLocalPart

    public init?(text: String) {
        if text == "legacy" {
            self = .legacy
        } else if text == "email-local-part" {
            self = .emailLocalPart
        } else if text.hasPrefix("provider:"), ProviderID.isKnown(String(text.dropFirst(9))) {
            self = .provider(String(text.dropFirst(9)))
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .legacy: "legacy"
        case .provider(let id): "provider:\(id)"
        case .emailLocalPart: "email-local-part"
        }
    }
}

public enum NotRevocablePolicy: String, Sendable, Equatable, CaseIterable {
    /// Delete the account anyway when a revocation is not possible (Apple allows this when no token exists).
    case delete
    /// Keep the account for a person to look at.
    case keep
}

public struct StagesConfig: Sendable, Equatable {
    public var normalize = true
    public var detectRelay = true
    public var backfillNames: [NameSource]?
    public var revoke: RevokeConfig?
    public var delete: DeleteConfig?
    /// `stages.import`: apply imports the migration's import file into `services.google`'s project.
    public var importAccounts: ImportConfig?
}

/// How apply imports the import file (`output.import_json`) through `accounts:batchCreate`.
public struct ImportConfig: Sendable, Equatable {
    /// Accounts per request: the API takes up to 1000.
    public var usersPerRequest = 1000
    /// The project (and tenant) the accounts go to, when not `services.google`'s: a migration from one project (a live
    /// source) to another, with the same credentials.
    public var projectId: String?
    public var tenantId: String?
    /// The project's password hash parameters, needed when an account has a `passwordHash`.
    public var passwordHash: PasswordHashConfig?
    /// What the import does with an account whose uid the project holds already (`accounts:batchCreate` overwrites it):
    /// each request's uids are looked up before it is first sent.
    public var existingAccounts = ExistingAccounts.keep
    public init() {}

    public enum ExistingAccounts: String, Sendable, CaseIterable {
        /// Left as the project has it, not imported, and listed.
        case keep
        /// Replaced with the file's, as the API does on its own (no lookups).
        case overwrite
    }
}

/// The parameters of the hash the source project's passwords were stored with (the console's Authentication > Users >
/// Password hash parameters); `accounts:batchCreate` takes them with the hashes.
public struct PasswordHashConfig: Sendable, Equatable {
    /// `SCRYPT` (Firebase's own), `HMAC_SHA256`, `BCRYPT`, `PBKDF2_SHA256`…: the API's `hashAlgorithm`.
    public var algorithm: String
    /// A file holding the base64 signer key (a secret); else the environment variable `signerKeyEnv`.
    public var signerKeyFile: String?
    public var signerKeyEnv = "IDPIPE_PASSWORD_HASH_KEY"
    /// Base64, as the console shows it.
    public var saltSeparator: String?
    public var rounds: Int?
    public var memoryCost: Int?
    public init(algorithm: String) {
        self.algorithm = algorithm
    }

    /// The API's names (`hashAlgorithm`), as the Admin SDKs and `firebase auth:import` list them. `STANDARD_SCRYPT` is
    /// left out: its parameters (block size, parallelization, key length) have no key here.
    public static let algorithms = ["SCRYPT", "HMAC_SHA512", "HMAC_SHA256", "HMAC_SHA1", "HMAC_MD5", "MD5", "SHA1", "SHA256", "SHA512",
                                    "PBKDF_SHA1", "PBKDF2_SHA256", "BCRYPT"]

    /// Firebase's SCRYPT and the HMACs hash with a key; the others take none.
    public var usesSignerKey: Bool { algorithm == "SCRYPT" || algorithm.hasPrefix("HMAC_") }
}

public struct RevokeConfig: Sendable, Equatable {
    public var apple = true
    public var facebook = true
    public var firebaseSessions = true
}

public struct DeleteConfig: Sendable, Equatable {
    public var dataWebhook: String?
    public var firestore: FirestorePaths?
    public var realtimeDatabase: DatabasePaths?
    public var storage: StoragePaths?
    public var accounts = true
    public var whenNotRevocable: NotRevocablePolicy = .keep
    /// When a revocation was tried and failed (after its retries): keep the account by default.
    public var whenRevocationFails: NotRevocablePolicy = .keep

    /// The configured path deletions, in execution order.
    public var pathKinds: [ActionKind] {
        [firestore != nil ? .deleteFirestore : nil, realtimeDatabase != nil ? .deleteDatabase : nil, storage != nil ? .deleteStorage : nil].compactMap { $0 }
    }

    /// The `{uid}` paths of one kind of path deletion.
    public func paths(_ kind: ActionKind) -> [String] {
        switch kind {
        case .deleteFirestore: firestore?.paths ?? []
        case .deleteDatabase: realtimeDatabase?.paths ?? []
        case .deleteStorage: storage?.paths ?? []
        default: []
        }
    }

    public var policy: DeletionPolicy { DeletionPolicy(whenNotRevocable: whenNotRevocable, whenRevocationFails: whenRevocationFails) }
}

public struct GuardsConfig: Sendable, Equatable {
    public var maxDeletions: Int?
    public var maxDeletionShare: Double?

    /// `max_deletion_share` as a percentage.
    public var maxDeletionPercent: String? { maxDeletionShare.map(Self.percent) }

    /// The limits in words ("at most 100 deletions, at most 10 % of accounts"); nil when there are none.
    public var limits: String? {
        let limits = [maxDeletions.map { "at most \($0) deletions" }, maxDeletionPercent.map { "at most \($0) % of accounts" }].compactMap { $0 }
        return limits.isEmpty ? nil : limits.joined(separator: ", ")
    }

    /// A share (0 to 1) as a percentage, as written: 0.034 is `3.4`, not the `3.4000000000000004` of `0.034 * 100`;
    /// 0.5 is `50`, 1e-9 is `0.0000001`. In decimals, to 12 places (no exponent, and no share below them shown as 0).
    public static func percent(_ share: Double) -> String {
        let places: Int64 = 1_000_000_000_000
        let units = Int64((min(max(share, 0), 1) * 100 * Double(places)).rounded())
        guard units > 0 || share <= 0 else { return "less than 0.000000000001" }
        let fraction = String(units % places)
        let digits = String(repeating: "0", count: 12 - fraction.count) + fraction
        let trimmed = digits.reversed().drop { $0 == "0" }.reversed()
        return "\(units / places)" + (trimmed.isEmpty ? "" : "." + String(trimmed))
    }
}

public struct ReportConfig: Sendable, Equatable {
    public var revealPersonalData = false
    /// How many accounts each Markdown list shows; the JSON report and the CSV ledger have them all.
    public var listLimit = 50

    public init() {}
}

public struct OutputConfig: Sendable, Equatable {
    /// An `auth:import`-ready JSON file of the cleaned accounts (migrations).
    public var importJSON: String?
    /// Whether the import file may hold two accounts with one email: for a project whose sign-in settings allow it
    /// (Identity Platform's `signIn.allowDuplicateEmails`). Off, the later account is quarantined (`ImportKeys`).
    public var allowDuplicateEmails = false

    /// The JSON reports a plan and an apply write in the output folder, which the import file shares: the names the idpipe
    /// command's `ReportWriter` gives them (whose run also refuses any of its files as the import file's name).
    public static let reportFileNames = ["plan.json", "report.json"]

    public init(importJSON: String? = nil, allowDuplicateEmails: Bool = false) {
        self.importJSON = importJSON
        self.allowDuplicateEmails = allowDuplicateEmails
    }
}
