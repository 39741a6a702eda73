import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

/// Decodes one user object of an `auth:export` JSON file (or an Identity Toolkit `UserInfo`).
/// A syntax error throws (the record is cut short); a bad value is returned as the record's issue.
enum AccountJSONDecoder {
    /// `normalize`: how the normalize stage reads the values (nil with it off), for the other problems of a bad record.
    static func decode(_ cursor: inout JSONCursor, normalize: AccountNormalizer.Options? = nil) throws(JSONCursor.SyntaxError) -> Result<Account, RecordIssue> {
        var account = Account(localId: "")
        // Every bad value is noted and decoding goes on, so that the quarantine names all of them at once.
        var issues: [RecordIssue] = []
        var sawLocalId = false
        func note(_ field: String, _ reason: String) {
            issues.append(RecordIssue(field: field, reason: reason))
        }
        // A key given twice would leave its second value in place of the first without a word (an older last sign-in, a
        // provider list emptied): the record goes to the quarantine. lastLoginAt, the API's name, is lastSignedInAt.
        var keys = KeysRead()
        func once(_ bit: UInt16, _ field: String) {
            if !keys.first(bit) { note(field, bit == 1 << 9 ? "is given twice (as lastSignedInAt or lastLoginAt)" : "is given twice") }
        }
        cursor.enterRecord()
        try cursor.expect(UInt8(ascii: "{"))
        if try cursor.peek() == UInt8(ascii: "}") {
            cursor.position += 1
            return .failure(RecordIssue(field: "localId", reason: "is missing or empty"))
        }
        while true {
            let key = try cursor.key()
            try cursor.expect(UInt8(ascii: ":"))
            cursor.currentKey = key
            switch key.count {
            case 4 where matches(key, "salt"): once(1, "salt"); account.salt = try cursor.stringOrNull()
            case 5 where matches(key, "email"): once(1 << 1, "email"); account.email = try cursor.stringOrNull()
            case 7 where matches(key, "localId"):
                once(1 << 2, "localId")
                account.localId = try cursor.stringOrNull() ?? ""
                sawLocalId = true
            case 7 where matches(key, "mfaInfo"): once(1 << 3, "mfaInfo"); account.mfaInfoJSON = try cursor.skipValue(capture: true)
            case 8 where matches(key, "photoUrl"): once(1 << 4, "photoUrl"); account.photoUrl = try cursor.stringOrNull()
            case 8 where matches(key, "disabled"): once(1 << 5, "disabled"); account.disabled = try cursor.bool()
            case 9 where matches(key, "createdAt"): once(1 << 6, "createdAt"); account.createdAt = try timestamp(&cursor, note: note)
            case 11 where matches(key, "displayName"): once(1 << 7, "displayName"); account.displayName = try cursor.stringOrNull()
            case 11 where matches(key, "phoneNumber"): once(1 << 8, "phoneNumber"); account.phoneNumber = try cursor.stringOrNull()
            case 11 where matches(key, "lastLoginAt"), 14 where matches(key, "lastSignedInAt"):
                once(1 << 9, "lastSignedInAt"); account.lastSignedInAt = try timestamp(&cursor, note: note)
            case 12 where matches(key, "passwordHash"): once(1 << 10, "passwordHash"); account.passwordHash = try cursor.stringOrNull()
            case 13 where matches(key, "emailVerified"): once(1 << 11, "emailVerified"); account.emailVerified = try cursor.bool()
            case 16 where matches(key, "customAttributes"): once(1 << 12, "customAttributes"); account.customAttributes = try cursor.stringOrNull()
            case 16 where matches(key, "providerUserInfo"):
                once(1 << 13, "providerUserInfo"); account.providers = try providers(&cursor, of: account, note: note)
            default: try cursor.skipValue()
            }
            if try cursor.peek() == UInt8(ascii: ",") {
                cursor.position += 1
                continue
            }
            cursor.currentKey = nil
            try cursor.expect(UInt8(ascii: "}"))
            break
        }
        // With the problems normalization finds in the values that could be read.
        if let issue = RecordIssue(issues) { return .failure(AccountNormalizer.issue(decoded: issue, in: account, options: normalize)) }
        if !sawLocalId { return .failure(RecordIssue(field: "localId", reason: "is missing or empty")) }
        return .success(account)
    }

    /// Reads a user object's fields as bytes for the plan's fast path (`AccountProcessor.fastPath`), with the syntax checks
    /// of `decode` and without making a string. False when the object is not read plainly: a string with an escape
    /// where the value is needed, a key given twice, a null or missing id, a provider without its id or rawId, a
    /// timestamp other than the export's quoted digits. The caller then decodes the object again with `decode`, which
    /// decides; so does an error thrown here (the cursor is left anywhere).
    static func scanPlain(_ cursor: inout JSONCursor, into account: inout AccountBytes) throws(JSONCursor.SyntaxError) -> Bool {
        try cursor.expect(UInt8(ascii: "{"))
        if try cursor.peek() == UInt8(ascii: "}") { return false }
        // A key read before sends the record to `decode`, which quarantines it.
        var keys = KeysRead()
        func first(_ bit: UInt16) -> Bool { keys.first(bit) }
        while true {
            let key = try cursor.key()
            try cursor.expect(UInt8(ascii: ":"))
            switch key.count {
            case 5 where matches(key, "email"):
                guard first(1), let value = try plain(&cursor) else { return false }
                account.email = value
            case 7 where matches(key, "localId"):
                guard first(2), let value = try plain(&cursor), let id = value else { return false }
                account.localId = id
            case 8 where matches(key, "disabled"):
                guard first(4) else { return false }
                account.disabled = try cursor.bool()
            case 9 where matches(key, "createdAt"):
                guard first(8), let value = quotedTimestamp(&cursor) else { return false }
                account.createdAt = value
            case 11 where matches(key, "displayName"):
                guard first(16), let value = try plain(&cursor) else { return false }
                account.displayName = value
            case 11 where matches(key, "phoneNumber"):
                guard first(32), let value = try plain(&cursor) else { return false }
                account.phoneNumber = value
            // Both name the last sign-in.
            case 11 where matches(key, "lastLoginAt"), 14 where matches(key, "lastSignedInAt"):
                guard first(64), let value = quotedTimestamp(&cursor) else { return false }
                account.lastSignedInAt = value
            case 16 where matches(key, "providerUserInfo"):
                guard first(128), try plainProviders(&cursor, into: &account) else { return false }
            // Not needed by the fast path, but read (and checked) as `decode` reads them, for `account(from:)`.
            case 13 where matches(key, "emailVerified"):
                guard first(256) else { return false }
                account.emailVerified = try cursor.bool()
            case 4 where matches(key, "salt"):
                guard first(512) else { return false }
                account.salt = try optionalText(&cursor, &account.complete)
            case 8 where matches(key, "photoUrl"):
                guard first(1024) else { return false }
                account.photoUrl = try optionalText(&cursor, &account.complete)
            case 12 where matches(key, "passwordHash"):
                guard first(2048) else { return false }
                account.passwordHash = try optionalText(&cursor, &account.complete)
            case 16 where matches(key, "customAttributes"):
                guard first(4096) else { return false }
                account.customAttributes = try optionalText(&cursor, &account.complete)
            case 7 where matches(key, "mfaInfo"):
                guard first(8192) else { return false }
                cursor.skipWhitespace()
                let start = cursor.position
                try cursor.skipValue()
                account.mfaInfo = UnsafeBufferPointer(rebasing: cursor.bytes[start..<cursor.position])
            default: try cursor.skipValue()
            }
            if try cursor.peek() == UInt8(ascii: ",") {
                cursor.position += 1
                continue
            }
            try cursor.expect(UInt8(ascii: "}"))
            return keys.bits & 2 != 0
        }
    }

    /// The links of `providerUserInfo`, for `scanPlain`.
    private static func plainProviders(_ cursor: inout JSONCursor, into account: inout AccountBytes) throws(JSONCursor.SyntaxError) -> Bool {
        try cursor.expect(UInt8(ascii: "["))
        if try cursor.peek() == UInt8(ascii: "]") {
            cursor.position += 1
            return true
        }
        while true {
            try cursor.expect(UInt8(ascii: "{"))
            var providerId: UnsafeBufferPointer<UInt8>?, rawId: UnsafeBufferPointer<UInt8>?
            var email: UnsafeBufferPointer<UInt8>??, displayName: UnsafeBufferPointer<UInt8>??, photoUrl: UnsafeBufferPointer<UInt8>??
            if try cursor.peek() != UInt8(ascii: "}") {
                while true {
                    let key = try cursor.key()
                    try cursor.expect(UInt8(ascii: ":"))
                    switch key.count {
                    case 5 where matches(key, "rawId"):
                        guard rawId == nil, let value = try plain(&cursor), let id = value else { return false }
                        rawId = id
                    case 5 where matches(key, "email"):
                        guard email == nil, let value = try plain(&cursor) else { return false }
                        email = value
                    case 10 where matches(key, "providerId"):
                        guard providerId == nil, let value = try plain(&cursor), let id = value else { return false }
                        providerId = id
                    case 11 where matches(key, "displayName"):
                        guard displayName == nil, let value = try plain(&cursor) else { return false }
                        displayName = value
                    case 8 where matches(key, "photoUrl"):
                        guard photoUrl == nil else { return false }
                        photoUrl = .some(try optionalText(&cursor, &account.complete))
                    default: try cursor.skipValue()
                    }
                    if try cursor.peek() == UInt8(ascii: ",") {
                        cursor.position += 1
                        continue
                    }
                    break
                }
            }
            try cursor.expect(UInt8(ascii: "}"))
            guard let providerId, let rawId else { return false }
            account.links.append(LinkBytes(providerId: providerId, rawId: rawId, email: email ?? nil, displayName: displayName ?? nil,
                                           photoUrl: photoUrl ?? nil))
            if try cursor.peek() == UInt8(ascii: ",") {
                cursor.position += 1
                continue
            }
            try cursor.expect(UInt8(ascii: "]"))
            return true
        }
    }

    /// A string's bytes (`.some(nil)` for null); nil when it has an escape, which `scanPlain` leaves to `decode`.
    private static func plain(_ cursor: inout JSONCursor) throws(JSONCursor.SyntaxError) -> UnsafeBufferPointer<UInt8>?? {
        switch try cursor.plainString() {
        case .null: .some(nil)
        case .bytes(let bytes): bytes
        case .escaped: nil
        }
    }

    /// A string or null the fast path does not need, with the checks of `stringOrNull`: its bytes, or nil for null and
    /// for a string with an escape (which is checked, and makes the record `complete` no more).
    private static func optionalText(_ cursor: inout JSONCursor, _ complete: inout Bool) throws(JSONCursor.SyntaxError) -> UnsafeBufferPointer<UInt8>? {
        let start = cursor
        switch try cursor.plainString() {
        case .null: return nil
        case .bytes(let bytes): return bytes
        case .escaped:
            cursor = start
            try cursor.skipString()
            complete = false
            return nil
        }
    }

    /// The account `decode` makes of a record `scanPlain` read whole (`complete`), made from the bytes it kept: the
    /// full path's account, without reading the record again.
    static func account(from scanned: borrowing AccountBytes) -> Account {
        func text(_ bytes: UnsafeBufferPointer<UInt8>?) -> String? {
            bytes.map { String(decoding: $0, as: UTF8.self) }
        }
        /// A provider's value that repeats the account's shares its string, as `decode` makes it share.
        func text(_ bytes: UnsafeBufferPointer<UInt8>?, sameAs earlier: String?) -> String? {
            guard let bytes else { return nil }
            if let earlier, TextScan.sameBytes(bytes, earlier) { return earlier }
            return String(decoding: bytes, as: UTF8.self)
        }
        var account = Account(
            localId: String(decoding: scanned.localId, as: UTF8.self), email: text(scanned.email), emailVerified: scanned.emailVerified,
            passwordHash: text(scanned.passwordHash), salt: text(scanned.salt), displayName: text(scanned.displayName),
            photoUrl: text(scanned.photoUrl), lastSignedInAt: scanned.lastSignedInAt, createdAt: scanned.createdAt,
            phoneNumber: text(scanned.phoneNumber), disabled: scanned.disabled, customAttributes: text(scanned.customAttributes),
            mfaInfoJSON: text(scanned.mfaInfo))
        account.providers.reserveCapacity(scanned.links.count)
        for link in scanned.links {
            account.providers.append(ProviderLink(
                providerId: String(decoding: link.providerId, as: UTF8.self), rawId: String(decoding: link.rawId, as: UTF8.self),
                email: text(link.email, sameAs: account.email), displayName: text(link.displayName, sameAs: account.displayName),
                photoUrl: text(link.photoUrl, sameAs: account.photoUrl)))
        }
        return account
    }

    /// A timestamp as the export writes it (quoted digits), for `scanPlain`; nil for any other form.
    private static func quotedTimestamp(_ cursor: inout JSONCursor) -> Int64? {
        cursor.skipWhitespace()
        guard !cursor.atEnd, cursor.bytes[cursor.position] == UInt8(ascii: "\"") else { return nil }
        return cursor.quotedDigits()
    }

    /// A provider's email, name and photo mostly repeat the account's (decoded before them in an export): those are
    /// shared, not copied.
    private static func providers(_ cursor: inout JSONCursor, of account: Account, note: (String, String) -> Void) throws(JSONCursor.SyntaxError)
        -> [ProviderLink] {
        var links: [ProviderLink] = []
        try cursor.expect(UInt8(ascii: "["))
        if try cursor.peek() == UInt8(ascii: "]") {
            cursor.position += 1
            return links
        }
        while true {
            let index = links.count
            // Filled in place: a link built on its own was copied into the array (a retain and release of each string).
            links.append(ProviderLink(providerId: "", rawId: ""))
            cursor.providerIndex = index
            cursor.currentKey = nil
            try cursor.expect(UInt8(ascii: "{"))
            var sawRawId = false
            var keys = KeysRead()
            func once(_ bit: UInt16, _ key: String) {
                if !keys.first(bit) { note("providerUserInfo[\(index)].\(key)", "is given twice") }
            }
            if try cursor.peek() != UInt8(ascii: "}") {
                while true {
                    let key = try cursor.key()
                    try cursor.expect(UInt8(ascii: ":"))
                    cursor.currentKey = key
                    switch key.count {
                    case 5 where matches(key, "rawId"):
                        once(1, "rawId")
                        links[index].rawId = try cursor.stringOrNull() ?? ""
                        sawRawId = true
                    case 5 where matches(key, "email"): once(1 << 1, "email"); links[index].email = try cursor.stringOrNull(sameAs: account.email)
                    case 8 where matches(key, "photoUrl"):
                        once(1 << 2, "photoUrl"); links[index].photoUrl = try cursor.stringOrNull(sameAs: account.photoUrl)
                    case 10 where matches(key, "providerId"): once(1 << 3, "providerId"); links[index].providerId = try cursor.stringOrNull() ?? ""
                    case 11 where matches(key, "displayName"):
                        once(1 << 4, "displayName"); links[index].displayName = try cursor.stringOrNull(sameAs: account.displayName)
                    default: try cursor.skipValue()
                    }
                    if try cursor.peek() == UInt8(ascii: ",") {
                        cursor.position += 1
                        continue
                    }
                    break
                }
            }
            cursor.currentKey = nil
            try cursor.expect(UInt8(ascii: "}"))
            if !sawRawId { note("providerUserInfo[\(index)].rawId", "is missing") }
            cursor.providerIndex = nil
            if try cursor.peek() == UInt8(ascii: ",") {
                cursor.position += 1
                continue
            }
            try cursor.expect(UInt8(ascii: "]"))
            return links
        }
    }

    /// Epoch milliseconds, as a decimal string (the export's form) or a number.
    private static func timestamp(_ cursor: inout JSONCursor, note: (String, String) -> Void) throws(JSONCursor.SyntaxError) -> Int64? {
        let byte = try cursor.peek()
        if byte == UInt8(ascii: "\""), let value = cursor.quotedDigits() { return value }
        let text: String?
        if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "n") {
            text = try cursor.stringOrNull()
        } else {
            text = try cursor.numberText()
        }
        guard let text, !text.isEmpty else { return nil }
        guard let value = Int64(text) else {
            note(cursor.field, "\(Quoted.value(text)) is not a timestamp in epoch milliseconds")
            return nil
        }
        return value
    }

    @inline(__always)
    private static func matches(_ key: UnsafeBufferPointer<UInt8>, _ word: StaticString) -> Bool {
        memcmp(key.baseAddress!, word.utf8Start, key.count) == 0
    }
}

/// The keys of one object read so far, a bit each: how both readers of a user object find a key given twice.
struct KeysRead {
    private(set) var bits: UInt16 = 0

    /// Marks the key read; false when it was read before.
    @inline(__always)
    mutating func first(_ bit: UInt16) -> Bool {
        defer { bits |= bit }
        return bits & bit == 0
    }
}
