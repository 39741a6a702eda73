/// A name captured by the app's own backend at first sign-in (the legacy names table).
public struct LegacyName: Sendable, Equatable {
    public var givenName: String
    public var familyName: String
    /// The user agreed to have this name linked to their (possibly anonymised) Apple account.
    public var consent: Bool

    public init(givenName: String, familyName: String, consent: Bool) {
        self.givenName = givenName
        self.familyName = familyName
        self.consent = consent
    }
}

/// Why an account's owner asked for deletion, and when.
public struct DeletionRequest: Sendable, Equatable {
    public var requestedAt: Int64
    public var source: String

    public init(requestedAt: Int64, source: String) {
        self.requestedAt = requestedAt
        self.source = source
    }
}

/// A secret value. Its description never shows the value; only a fingerprint leaves the process.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public let value: String
    /// A short, non-reversible fingerprint (first 12 hex digits of SHA-256), computed by the reader.
    public let fingerprint: String

    public init(value: String, fingerprint: String) {
        self.value = value
        self.fingerprint = fingerprint
    }

    public var description: String { "<secret sha256:\(fingerprint)>" }
    public var debugDescription: String { description }
}

/// The kinds of Apple credential an app may have kept.
public enum AppleTokenKind: String, Sendable, Codable, CaseIterable {
    case refreshToken = "refresh_token"
    case accessToken = "access_token"
    case authorizationCode = "authorization_code"
}

/// Facebook Login comes in two forms; only classic logins can be revoked from a server.
public enum FacebookLoginKind: String, Sendable, Codable {
    case classic
    case limited
}

/// The Apple credential stored for one account.
public struct StoredAppleToken: Sendable, Equatable {
    public var kind: AppleTokenKind
    public var token: Secret
    public var capturedAt: Int64

    public init(kind: AppleTokenKind, token: Secret, capturedAt: Int64) {
        self.kind = kind
        self.token = token
        self.capturedAt = capturedAt
    }
}

/// The Facebook login details stored for one account.
public struct StoredFacebookLogin: Sendable, Equatable {
    public var facebookId: String
    public var login: FacebookLoginKind
    public var accessToken: Secret?

    public init(facebookId: String, login: FacebookLoginKind, accessToken: Secret?) {
        self.facebookId = facebookId
        self.login = login
        self.accessToken = accessToken
    }
}

/// Everything the app stored about one account's provider credentials.
public struct StoredCredentials: Sendable, Equatable {
    public var apple: StoredAppleToken?
    public var facebook: StoredFacebookLogin?

    public init(apple: StoredAppleToken? = nil, facebook: StoredFacebookLogin? = nil) {
        self.apple = apple
        self.facebook = facebook
    }
}

/// The side inputs of a run, looked up by account id.
public struct SideInputs: Sendable {
    public var legacyNames: KeyedRows<LegacyName>
    public var deletionRequests: KeyedRows<DeletionRequest>
    public var credentials: KeyedRows<StoredCredentials>
    public var protectedIds: Set<String>

    public init(
        legacyNames: KeyedRows<LegacyName> = [:], deletionRequests: KeyedRows<DeletionRequest> = [:],
        credentials: KeyedRows<StoredCredentials> = [:], protectedIds: Set<String> = []
    ) {
        self.legacyNames = legacyNames
        self.deletionRequests = deletionRequests
        self.credentials = credentials
        self.protectedIds = protectedIds
    }
}

/// Rows looked up by account id, stored densely. A dictionary keeps its values inline in buckets of which a quarter
/// to five eighths are empty, and a stored credential is about 100 bytes; here the dictionary holds only the id and
/// a row number. For the 254k side-input rows of the 1M-account benchmark this lowers the plan's peak by 6-12 MB.
public struct KeyedRows<Value: Sendable>: Sendable, ExpressibleByDictionaryLiteral {
    private var index: [String: Int32] = [:]
    private var rows: ContiguousArray<Value> = []

    public init() {}

    public init(_ dictionary: [String: Value]) {
        index.reserveCapacity(dictionary.count)
        rows.reserveCapacity(dictionary.count)
        for (key, value) in dictionary { self[key] = value }
    }

    public init(dictionaryLiteral elements: (String, Value)...) {
        for (key, value) in elements { self[key] = value }
    }

    public var count: Int { rows.count }

    public subscript(key: String) -> Value? {
        get { index[key].map { rows[Int($0)] } }
        set {
            // One lookup of the id for a new row, the common case when reading a side input: the position is
            // inserted as a default if the id is not there yet.
            let appended = Int32(rows.count)
            let position = Int(Self.entry(&index[key, default: appended]))
            if position == rows.count {
                if let newValue { rows.append(newValue) } else { index[key] = nil }
            } else if let newValue {
                rows[position] = newValue
            } else {
                // The last row takes the removed one's place.
                index[key] = nil
                let last = rows.count - 1
                if position != last, let moved = index.first(where: { $0.value == Int32(last) })?.key {
                    rows[position] = rows[last]
                    index[moved] = Int32(position)
                }
                rows.removeLast()
            }
        }
    }

    private static func entry(_ value: inout Int32) -> Int32 { value }
}
